/** Boundary types of a rule. Radius in meters; coordinates are [longitude, latitude]. */
export type BoundaryInput =
  | { type: 'parametric'; parameter: string; min: number | null; max: number | null }
  | { type: 'radius'; lon: number; lat: number; radius: number }
  | { type: 'polygon'; coordinates: number[][][] };

export type Boundary = BoundaryInput & { id: string };

export interface NewRule { name: string; boundaries: BoundaryInput[] }

/** A rule as stored, with its current evaluation state. */
export interface RuleRecord {
  id: string;
  applicationId: string;
  deviceId: string;
  name: string;
  createdAt: Date;
  evaluated: boolean;
  covered: boolean;
  /** Absent in list output (the list has no boundaries). */
  boundaries?: Boundary[];
}

export type RuleWithBoundaries = RuleRecord & { boundaries: Boundary[] };

export const GEOGRAPHIC_TYPES = ['radius', 'polygon'] as const;
export const BOUNDARY_TYPES = ['parametric', ...GEOGRAPHIC_TYPES] as const;
