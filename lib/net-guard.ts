import dns from 'node:dns';
import net, { BlockList } from 'node:net';

/**
 * Webhook URLs must not reach internal services: an address is refused
 * when it is loopback, private, link-local (incl. cloud metadata 169.254.169.254), unspecified,
 * shared (CGNAT, incl. 100.100.100.200), multicast, reserved or documentation-only, or a unique-local
 * IPv6 (incl. fd00:ec2::254). IPv6 forms that embed an IPv4 address are judged by that address.
 * Decimal, hex, octal and short IPv4 spellings (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`)
 * never reach this module as such: WHATWG URL parsing (`new URL`) normalises them to dotted quads.
 */
const blocked = new BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(prefix, bits, 'ipv4');
for (const [prefix, bits] of [
  ['::', 128], ['::1', 128], ['100::', 64], ['2001::', 23], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10],
  ['fec0::', 10], ['ff00::', 8],
  // Local-use NAT64 (RFC 8215): translates to addresses of the local network, whatever it embeds.
  ['64:ff9b:1::', 48],
  // Documentation (RFC 9637) and SRv6 segment identifiers (RFC 9602): never a webhook receiver.
  ['3fff::', 20], ['5f00::', 16],
] as const) blocked.addSubnet(prefix, bits, 'ipv6');

/**
 * The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d,
 * RFC 2765), IPv4-compatible (::a.b.c.d, deprecated; includes :: and ::1), NAT64 (64:ff9b::/96)
 * or 6to4 (2002::/16) address.
 */
function embeddedIpv4(ip: string): string | null {
  const groups = expandIpv6(ip);
  if (!groups) return null;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  if (zeros(0, 5) && groups[5] === 0xffff) return v4(groups[6], groups[7]);
  if (zeros(0, 4) && groups[4] === 0xffff && groups[5] === 0) return v4(groups[6], groups[7]);
  if (zeros(0, 6)) return '0.0.0.0';
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)) return v4(groups[6], groups[7]);
  if (groups[0] === 0x2002) return v4(groups[1], groups[2]);
  return null;
}

function expandIpv6(ip: string): number[] | null {
  let text = ip.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1].split('.').map(Number);
    text = text.slice(0, dotted.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const part = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = part(head);
  const t = part(tail);
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill(0), ...t];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

/** True for an address a webhook may be sent to. */
export function isPublicAddress(address: string): boolean {
  const ip = address.replace(/%.*$/, ''); // a zone id (fe80::1%eth0) names an interface, not an address
  const family = net.isIP(ip);
  if (family === 4) return !blocked.check(ip, 'ipv4');
  if (family !== 6) return false;
  const v4 = embeddedIpv4(ip);
  if (v4 !== null) return isPublicAddress(v4);
  return !blocked.check(ip, 'ipv6');
}

export class PrivateAddressError extends Error {
  constructor(readonly host: string, readonly address: string) {
    const what = 'a loopback, private, link-local or otherwise non-public address';
    super(host === address ? `${host} is ${what}` : `${host} resolves to ${address}, ${what}`);
  }
}

/** `[::1]` → `::1` (URL.hostname keeps the brackets of IPv6 literals). */
export const bareHost = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1');

/** Resolver errors that mean "this name has no address (yet)"; delivery records them as such. */
export const UNRESOLVED = new Set(['ENOTFOUND', 'EAI_AGAIN', 'ENODATA', 'ESERVFAIL', 'ETIMEOUT', 'EAI_FAIL']);

/**
 * The check at subscription time. Throws PrivateAddressError if the host is, or resolves today to,
 * a non-public address. Returns false when the name does not resolve (within `timeoutMs`): it is
 * accepted, since integrators register URLs whose DNS comes later, and checked again at every
 * delivery (guardedLookup). Returns true for a host on public addresses only.
 */
export async function assertPublicHost(hostname: string, timeoutMs = 2_000): Promise<boolean> {
  const host = bareHost(hostname);
  if (net.isIP(host)) {
    if (!isPublicAddress(host)) throw new PrivateAddressError(host, host);
    return true;
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => { timer = setTimeout(resolve, timeoutMs, null); });
  try {
    const addresses = await Promise.race([dns.promises.lookup(host, { all: true, verbatim: true }), timeout]);
    if (!addresses) return false;
    for (const { address } of addresses) if (!isPublicAddress(address)) throw new PrivateAddressError(host, address);
    return true;
  } catch (err) {
    if (err instanceof PrivateAddressError) throw err;
    return false; // ENOTFOUND, EAI_AGAIN, …: no address today
  } finally {
    clearTimeout(timer);
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http(s).request that refuses non-public addresses: the check and the connection
 * use the same resolution, so a name that changes its answer after the check (DNS rebinding)
 * cannot slip through. Node skips `lookup` for IP literals, so callers check those themselves.
 */
export function guardedLookup(hostname: string, options: dns.LookupOptions, callback: LookupCallback): void {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    const bad = addresses.find((a) => !isPublicAddress(a.address));
    if (bad) return callback(Object.assign(new PrivateAddressError(hostname, bad.address), { code: 'EPRIVATE' }), []);
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0].address, addresses[0].family);
  });
}
