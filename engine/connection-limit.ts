/**
 * The connection caps every listener hookgate opens is held to (the hook
 * listener, the admin listener, the mail flow's push listener): each one
 * accepts a connection before knowing anything of its sender, so none may
 * be left for one peer to fill. The per-address cap
 * (`server.maxConnectionsPerAddress`): open sockets are counted per peer
 * address (IPv6 per /64, as the auth limiter counts) and a socket past the
 * cap is closed at once, before a byte of it is parsed. Peers in
 * `server.trustedProxies` are exempt: many clients share them, and the
 * listener-wide `server.maxConnections` still bounds them.
 */
import type { Server } from 'node:http';
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

/** The caps of one listener (the `server` section's settings). */
export type ListenerCaps = {
  maxConnections: number;
  maxConnectionsPerAddress: number;
  trustedProxies: readonly string[];
};

/**
 * Hold a listener to its caps: past either one a new socket is closed at once, unanswered
 * (answering costs what the cap saves).
 */
export function capConnections(server: Server, caps: ListenerCaps): ConnectionLimiter {
  server.maxConnections = caps.maxConnections;
  const perAddress = createConnectionLimiter(caps.maxConnectionsPerAddress, caps.trustedProxies);
  server.on('connection', (socket) => perAddress.admit(socket));
  return perAddress;
}
