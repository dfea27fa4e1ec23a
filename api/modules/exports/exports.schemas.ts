import { Type } from 'typebox';
import { Uuid } from '../../schemas/common.js';

const QueryString = (description: string) => Type.Optional(Type.String({ description }));

const Since = QueryString('Exclusive lower bound: ISO 8601, YYYY-MM-DD or epoch milliseconds (default: none)');
const Until = QueryString('Inclusive upper bound: ISO 8601, YYYY-MM-DD or epoch milliseconds (default: the time of the call)');

export const MessagesExportQuery = Type.Object({
  since: Since,
  until: Until,
  format: QueryString('`csv` (default), `ndjson` or `gpx`'),
});

export const TripExportQuery = Type.Object({
  format: QueryString('`gpx` (default) or `geojson`'),
});

export const TripIdParams = Type.Object({ tripId: Uuid('Trip id') });

const Text = (description: string) => ({ schema: Type.String({ description }) });

/** The 200 of a message export, one media type per format (the body is streamed, not serialized from a schema). */
export const MessagesExportBody = {
  description: 'The messages of the range, oldest first, in the requested format, as an attachment (Content-Disposition)',
  content: {
    'text/csv': Text('RFC 4180, CRLF line ends, a header row of parameter names and units (docs/concepts/exports.md)'),
    'application/x-ndjson': Text('One message per line, as GET …/messages shows it'),
    'application/gpx+xml': Text('GPX 1.1: one track point per message with a location; speed (m/s) in the Garmin TrackPointExtension'),
  },
};

export const TripExportBody = {
  description: "The trip's track, oldest point first, as an attachment (Content-Disposition)",
  content: {
    'application/gpx+xml': Text('GPX 1.1: one <trk> of one <trkseg>'),
    'application/geo+json': Text("A GeoJSON Feature: a LineString of the track (null with fewer than 2 points), the trip's statistics as properties"),
  },
};

/** HEAD: the same checks and headers as the GET, no body; X-Total-Count gives the rows the GET would write. */
export const ExportHead = {
  description: 'The export\'s headers without its body; `X-Total-Count`: the messages (GPX, GeoJSON: those with a location) it holds',
  headers: { 'X-Total-Count': { schema: Type.Integer({ description: 'Rows the export writes (a CSV\'s header row not counted)' }) } },
};
