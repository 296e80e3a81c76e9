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
    if (trustedProxies.length === 0 || !forwardedFor || !isTrusted(address)) return address;
    // Walk from the right: the first hop we do not trust is the client.
    const hops = forwardedFor.split(',').map((hop) => normaliseAddress(hop.trim()));
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i] as string;
      if (isIP(hop) === 0) return address;
      if (!isTrusted(hop)) return hop;
    }
    return hops[0] ?? address;
  };
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
