import cliProgress from 'cli-progress';

/** What `runs start --wait` and `drive` show while a drive plays. */
export interface ProgressFigures {
  state: string;
  framesSent: number;
  framesTotal: number;
  /** m */ distance: number;
  /** m */ distanceTotal: number;
  /** s of wall-clock time */ remainingSeconds: number;
}

export interface ProgressView {
  update(p: ProgressFigures): void;
  stop(): void;
}

const PLAIN_EVERY_MS = 1000;

/**
 * On a terminal, a progress bar (distance, frames, time left); otherwise plain lines at most once
 * a second. Both go to stderr, so stdout carries only the result (and --json stays parseable).
 */
export function createProgressView(stream: NodeJS.WriteStream = process.stderr): ProgressView {
  if (stream.isTTY) return barView(stream);
  let lastAt = 0;
  let lastLine = '';
  let pending: ProgressFigures | null = null;
  const print = (p: ProgressFigures) => {
    const line = `${p.state}: ${p.framesSent}/${p.framesTotal} frames, ${Math.round(p.distance)}/${Math.round(p.distanceTotal)} m, `
      + `${p.remainingSeconds.toFixed(1)} s left`;
    if (line !== lastLine) stream.write(`${line}\n`);
    lastLine = line;
    lastAt = Date.now();
    pending = null;
  };
  return {
    update(p) {
      if (Date.now() - lastAt >= PLAIN_EVERY_MS) print(p);
      else pending = p;
    },
    stop() {
      if (pending) print(pending);
    },
  };
}

function barView(stream: NodeJS.WriteStream): ProgressView {
  const bar = new cliProgress.SingleBar({
    stream, hideCursor: true, barsize: 30,
    format: '{state} [{bar}] {distance}/{distanceTotal} m | {value}/{total} frames | {left} s left',
  }, cliProgress.Presets.shades_classic);
  let started = false;
  return {
    update(p) {
      const payload = { state: p.state.padEnd(8), distance: Math.round(p.distance), distanceTotal: Math.round(p.distanceTotal), left: p.remainingSeconds.toFixed(1) };
      if (!started) bar.start(p.framesTotal, p.framesSent, payload);
      else bar.setTotal(p.framesTotal);
      started = true;
      bar.update(p.framesSent, payload);
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
