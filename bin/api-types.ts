// The REST API's answers as the client commands read them: the API's own response schemas, imported as types only
// (nothing of the API is loaded), so that a change to an answer's shape is a type error in the command that reads it.
import type { Static } from 'typebox';
import type { AdminDevice, Application, Token } from '../api/modules/admin/admin.schemas.js';
import type { Dummy, Route, Run } from '../api/modules/dummies/dummies.schemas.js';
import type { ReportCard } from '../api/modules/report-cards/report-cards.schemas.js';
import type { Trip } from '../api/modules/trips/trips.schemas.js';
import type { Command } from '../api/modules/commands/commands.schemas.js';
import type { Rule, RuleSummary } from '../api/modules/rules/rules.schemas.js';
import type { OffsetMeta } from '../api/schemas/common.js';

export type ApplicationView = Static<typeof Application>;
export type TokenView = Static<typeof Token>;
export type AdminDeviceView = Static<typeof AdminDevice>;
export type RouteView = Static<typeof Route>;
export type DummyView = Static<typeof Dummy>;
export type RunView = Static<typeof Run>;
export type TripView = Static<typeof Trip>;
export type ReportCardView = Static<typeof ReportCard>;
export type CommandView = Static<typeof Command>;
export type RuleView = Static<typeof Rule>;
export type RuleSummaryView = Static<typeof RuleSummary>;
/** One page of an offset-paginated list (docs/reference/rest-api.md#pagination). */
export type OffsetPage<K extends string, T> = { [key in K]: T[] } & { meta: Static<typeof OffsetMeta> };
