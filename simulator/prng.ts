// Tiny seeded PRNG (mulberry32) so simulated values are repeatable in tests; never Math.random.

export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform in [min, max). */
  uniform(min: number, max: number): number;
  /** Approximately normal noise with mean 0 and the given standard deviation (sum of 4 uniforms). */
  noise(sd: number): number;
  /** Integer in [0, n). */
  int(n: number): number;
}

export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    uniform: (min, max) => min + (max - min) * next(),
    // Sum of 4 uniforms has variance 4/12; scale to unit variance.
    noise: (sd) => (next() + next() + next() + next() - 2) * Math.sqrt(3) * sd,
    int: (n) => Math.floor(next() * n),
  };
}

/** A 32-bit seed from a string (FNV-1a), e.g. to derive a seed from a run id. */
export function seedFromString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
