import { Type } from 'typebox';
import { Links, Nullable, StreamMeta, Uuid } from '../../schemas/common.js';
import { GRADES, type Grade as GradeLetter } from '../../../db/trips/formulas.js';

/** One literal per grade; a union built from the GRADES array is typed by the letters it holds. */
const Grade = Type.Unsafe<GradeLetter>(Type.Union(GRADES.map((g) => Type.Literal(g)), {
  description: 'A-F from penalty points per 10 km over at least 16 km (docs/concepts/trips-and-report-cards.md); I = too short or too little data',
}));

export const ReportCard = Type.Object({
  id: Uuid('Report card id'),
  deviceId: Uuid('Device of the trip'),
  vehicleId: Nullable(Uuid('Vehicle of the trip')),
  tripId: Uuid('The graded trip'),
  grade: Grade,
  score: Nullable(Type.Number({ description: 'Penalty points per 10 km of the trip, or of 16 km when the trip is shorter (2 per hard brake, 1 per hard acceleration, 1 per minute above 120 km/h); null for I' })),
  links: Links('self, trip, device, vehicle'),
}, { description: 'Report card' });

export const ReportCardList = Type.Object({ reportCards: Type.Array(ReportCard), meta: StreamMeta });
export const ReportCardResponse = Type.Object({ reportCard: ReportCard });
export const ReportCardIdParams = Type.Object({ reportCardId: Uuid('Report card id') });

const Count = Type.String({ description: 'Count, as a string' });
export const OverallResponse = Type.Object({
  reportCard: Type.Object({ overallGrade: Grade }, { description: 'Rounded mean grade of the graded trips in the segment' }),
  tripSampleSize: Type.Integer({ description: 'Report cards in the since/until segment' }),
  gradeCount: Type.Object({ A: Count, B: Count, C: Count, D: Count, F: Count, I: Count }, { description: 'Lifetime count per grade' }),
}, { description: 'Overall report card' });

export const OverallQuery = Type.Object({
  since: Type.Optional(Type.String({ description: 'Exclusive lower bound: ISO 8601, YYYY-MM-DD or epoch milliseconds' })),
  until: Type.Optional(Type.String({ description: 'Inclusive upper bound (default now)' })),
});
