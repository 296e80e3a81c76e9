/**
 * The client address a request is counted under: the socket's peer, or the
 * nearest untrusted hop of X-Forwarded-For when the peer is a trusted proxy.
 */
import { BlockList, isIP } from 'node:net';

/** Resolves a request's client address from its socket peer and X-Forwarded-For. */
export type ClientAddressResolver = (
  peer: string | undefined,
  forwardedFor: string | undefined,
) => string;

/** Build a resolver trusting X-Forwarded-For only from the given addresses or CIDR ranges. */
export function createClientAddressResolver(
  trustedProxies: readonly string[],
): ClientAddressResolver {
  const trusted = new BlockList();
  for (const entry of trustedProxies) addTrusted(trusted, entry);
  const isTrusted = (address: string) => {
    const family = isIP(address);
    return family !== 0 && trusted.check(address, family === 6 ? 'ipv6' : 'ipv4');
  };
  return function resolveClientAddress(peer, forwardedFor) {
    const address = normaliseAddress(peer ?? '');
    if (trustedProxies.length === 0 || forwardedFor === undefined || !isTrusted(address)) {
      return address;
    }
    return forwardedClient(forwardedFor, isTrusted);
  };
}

/**
 * The client a trusted proxy's X-Forwarded-For names: walking from the right, the first hop
 * not trusted. A hop is read as an address with or without a port (`1.2.3.4:80`, `[::1]:80`,
 * `[::1]`); one that is no address at all is a client of its own, under a key made of its text
 * (`hop:` and at most MAX_HOP_KEY_CHARS of it), never the proxy: counted as the proxy, one
 * sender behind it locked every sender out. Empty list elements are skipped. Pure.
 */
export function forwardedClient(
  forwardedFor: string,
  isTrusted: (address: string) => boolean,
): string {
  const hops = forwardedFor.split(',');
  let nearest: string | undefined;
  for (let i = hops.length - 1; i >= 0; i--) {
    const text = (hops[i] as string).trim();
    if (text === '') continue;
    const hop = hopAddress(text);
    if (hop === undefined) return opaqueHop(text);
    if (!isTrusted(hop)) return hop;
    nearest = hop;
  }
  // Every hop is a trusted proxy: the farthest one is the client; no hop at all is a client too.
  return nearest ?? opaqueHop('');
}

// A hop that is no address is keyed by this much of its text: enough to tell a proxy's
// obfuscated identifiers apart (RFC 7239 `_hidden`, `unknown`), little for each of the limiter's
// up to 10,000 tracked clients, and bounded in every log line it reaches.
const MAX_HOP_KEY_CHARS = 64;

function opaqueHop(text: string): string {
  return `hop:${text.slice(0, MAX_HOP_KEY_CHARS)}`;
}

// Port after an IPv4 address; brackets around an IPv6 address, with or without a port.
const IPV4_PORT = /^([0-9.]+):\d{1,5}$/;
const BRACKETED = /^\[([^\]]+)\](?::\d{1,5})?$/;

/** The address a forwarded hop names (port and brackets dropped), or undefined when it names none. */
export function hopAddress(hop: string): string | undefined {
  if (isIP(hop) !== 0) return normaliseAddress(hop);
  const v4 = IPV4_PORT.exec(hop)?.[1];
  if (v4 !== undefined && isIP(v4) === 4) return v4;
  const v6 = BRACKETED.exec(hop)?.[1];
  if (v6 !== undefined && isIP(v6) === 6) return normaliseAddress(v6);
  return undefined;
}

/** Validate a trustedProxies entry (address or CIDR); throws with a readable message. */
export function addTrusted(list: BlockList, entry: string): void {
  const [base, bits] = entry.split('/');
  const family = isIP(base ?? '');
  if (family === 0) throw new Error(`"${entry}" is not an IP address or CIDR range`);
  const type = family === 6 ? 'ipv6' : 'ipv4';
  if (bits === undefined) {
    list.addAddress(base as string, type);
    return;
  }
  const prefix = Number(bits);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > (family === 6 ? 128 : 32)) {
    throw new Error(`"${entry}" has an invalid prefix length`);
  }
  list.addSubnet(base as string, prefix, type);
}

/** "::ffff:127.0.0.1" is the same client as "127.0.0.1". */
export function normaliseAddress(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/**
 * The key failed authentications are counted under: an IPv4 address as is,
 * an IPv6 address by its /64 prefix (one subscriber usually holds a whole
 * /64, so counting single addresses would give a guesser 2^64 fresh starts).
 */
export function limiterKey(address: string): string {
  if (isIP(address) !== 6) return address;
  const hextets = expandIpv6(address);
  return hextets ? `${hextets.slice(0, 4).join(':')}::/64` : address;
}

// Eight hextets of an IPv6 address without zone id ("::" expanded, embedded IPv4 converted).
function expandIpv6(address: string): string[] | undefined {
  const bare = address.split('%')[0] as string;
  const [head = '', tail] = bare.split('::');
  const part = (text: string) => (text === '' ? [] : text.split(':'));
  const left = part(head);
  const right = tail === undefined ? [] : part(tail);
  for (const side of [left, right]) {
    const last = side[side.length - 1];
    if (last?.includes('.')) {
      const [a = 0, b = 0, c = 0, d = 0] = last.split('.').map(Number);
      side.splice(side.length - 1, 1, ((a << 8) | b).toString(16), ((c << 8) | d).toString(16));
    }
  }
  const missing = 8 - left.length - right.length;
  if (missing < 0 || (tail === undefined && missing !== 0)) return undefined;
  const all = [...left, ...Array<string>(missing).fill('0'), ...right];
  return all.map((h) => Number.parseInt(h, 16).toString(16));
}
