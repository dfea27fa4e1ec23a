// Preloaded (node --import) into a child process to give it a clock DRIVEWIRE_TEST_CLOCK_OFFSET_MS off the
// real one: a gateway host whose clock drifted. Date() called without `new` is not covered.
const offset = Number(process.env.DRIVEWIRE_TEST_CLOCK_OFFSET_MS || 0);
if (offset) {
  const Real = Date;
  class Shifted extends Real {
    constructor(...args) {
      if (args.length) super(...args);
      else super(Real.now() + offset);
    }
    static now() { return Real.now() + offset; }
  }
  globalThis.Date = Shifted;
}
