/**
 * The per-address connection cap (`server.maxConnectionsPerAddress`): open
 * sockets are counted per peer address (IPv6 per /64, as the auth limiter
 * counts) and a socket past the cap is closed at once, before a byte of it
 * is parsed. Peers in `server.trustedProxies` are exempt: many clients share
 * them, and the server-wide `server.maxConnections` still bounds them.
 */
import { BlockList, isIP, type Socket } from 'node:net';
import { addTrusted, limiterKey, normaliseAddress } from './client-address.ts';

export type ConnectionLimiter = {
  /** Count an accepted socket, or close it when its address is at the cap; true when kept. */
  admit(socket: Socket): boolean;
  /** Open sockets counted for an address (its /64 for IPv6); for tests and diagnostics. */
  openFor(address: string): number;
};

/** Build the limiter; `exempt` lists addresses or CIDR ranges that are never capped. */
export function createConnectionLimiter(
  maxPerAddress: number,
  exempt: readonly string[],
): ConnectionLimiter {
  const open = new Map<string, number>();
  const trusted = new BlockList();
  for (const entry of exempt) addTrusted(trusted, entry);
  const isExempt = (address: string) => {
    const family = isIP(address);
    return family !== 0 && trusted.check(address, family === 6 ? 'ipv6' : 'ipv4');
  };
  // Called once per socket from its own 'close': every way a socket ends passes here.
  const release = (key: string) => {
    const count = (open.get(key) ?? 1) - 1;
    if (count <= 0) open.delete(key);
    else open.set(key, count);
  };
  return {
    admit(socket) {
      if (socket.destroyed) return false;
      const address = normaliseAddress(socket.remoteAddress ?? '');
      if (exempt.length > 0 && isExempt(address)) return true;
      const key = limiterKey(address);
      const count = open.get(key) ?? 0;
      if (count >= maxPerAddress) {
        socket.destroy();
        return false;
      }
      open.set(key, count + 1);
      socket.once('close', () => release(key));
      return true;
    },
    openFor(address) {
      return open.get(limiterKey(normaliseAddress(address))) ?? 0;
    },
  };
}
