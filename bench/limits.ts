// What the operating system must allow before the connections scenario opens N sockets:
// checked before anything starts, so a low limit is one clear error instead of a flood of EMFILE.
import fs from 'node:fs';

/** Descriptors a bench process needs besides the sockets: the platform's files, pool, listeners, stdio. */
const FD_HEADROOM = 256;

/** The soft limit on open files of this process (`ulimit -n`); null where /proc/self/limits is not readable. */
export function openFilesLimit(): number | null {
  try {
    const line = fs.readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    return soft === undefined ? null : soft === 'unlimited' ? Infinity : Number(soft);
  } catch {
    return null;
  }
}

/** Local ports a client may bind to one server address (ip_local_port_range); null where unreadable. */
function ephemeralPorts(): number | null {
  try {
    const [low, high] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    return high - low + 1;
  } catch {
    return null;
  }
}

/**
 * Why `devices` idle connections cannot be held on this machine, or null. The bench process holds the
 * server side of every connection, the load process (a child, with the same limit) the client side.
 */
export function connectionsLimitProblem(devices: number): string | null {
  const limit = openFilesLimit();
  const need = devices + FD_HEADROOM;
  if (limit !== null && limit < need) {
    return `connections: --devices ${devices} needs about ${need} open files in the bench process (and as many in its load process), `
      + `but the limit is ${limit} (ulimit -n): raise it (ulimit -n ${Math.max(need, 1024)}) or use fewer --devices`;
  }
  const ports = ephemeralPorts();
  if (ports !== null && ports < devices) {
    return `connections: --devices ${devices} needs as many local ports, but net.ipv4.ip_local_port_range allows ${ports}: use fewer --devices`;
  }
  return null;
}
