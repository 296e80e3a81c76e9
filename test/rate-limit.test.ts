/**
 * The failed-auth limiter: lock after N failures in the window, lock length,
 * reset on success, bounded memory.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { BlockList } from 'node:net';
import { limiterKey } from '../engine/client-address.ts';
import { type AuthFailureLimiter, createMemoryLimiter } from '../engine/rate-limit.ts';

const settings = { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 30, maxClients: 100 };

describe('memory limiter', () => {
  const fail = (limiter: AuthFailureLimiter, client: string, at: number, times = 1) => {
    for (let i = 0; i < times; i++) limiter.recordFailure(client, at);
  };

  it('locks on the Nth failure, with the lock length as Retry-After', () => {
    const limiter = createMemoryLimiter(settings);
    fail(limiter, 'a', 1000, 2);
    expect(limiter.lockedFor('a', 1000)).toBe(0);
    fail(limiter, 'a', 1000);
    expect(limiter.lockedFor('a', 1000)).toBe(30);
    expect(limiter.lockedFor('a', 20_500)).toBe(11);
  });

  it('lifts the lock after lockoutSeconds and starts a fresh window', () => {
    const limiter = createMemoryLimiter(settings);
    fail(limiter, 'a', 0, 3);
    expect(limiter.lockedFor('a', 31_000)).toBe(0);
    fail(limiter, 'a', 31_000, 2);
    expect(limiter.lockedFor('a', 31_001)).toBe(0);
  });

  it('does not lock failures spread beyond the window', () => {
    const limiter = createMemoryLimiter(settings);
    for (let i = 0; i < 10; i++) {
      fail(limiter, 'a', i * 30_001);
      expect(limiter.lockedFor('a', i * 30_001)).toBe(0);
    }
  });

  it('a success clears the count but never a lock', () => {
    const limiter = createMemoryLimiter(settings);
    fail(limiter, 'a', 0, 2);
    limiter.reset('a');
    fail(limiter, 'a', 1, 2);
    expect(limiter.lockedFor('a', 1)).toBe(0);
    fail(limiter, 'a', 1);
    limiter.reset('a');
    expect(limiter.lockedFor('a', 2)).toBe(30);
  });

  it('stays bounded: a flood of counting addresses forgets the oldest count', () => {
    const limiter = createMemoryLimiter({ ...settings, maxClients: 10 });
    fail(limiter, 'victim', 0, 2);
    for (let i = 0; i < 10; i++) fail(limiter, `flood-${i}`, 0);
    fail(limiter, 'victim', 1);
    expect(limiter.lockedFor('victim', 1)).toBe(0);
  });

  it('a flood of fresh addresses cannot push out a lock', () => {
    const limiter = createMemoryLimiter({ ...settings, maxClients: 10 });
    fail(limiter, 'guesser', 0, 3);
    for (let i = 0; i < 1000; i++) fail(limiter, `flood-${i}`, 1, 2);
    expect(limiter.lockedFor('guesser', 2)).toBe(30);
  });

  test.prop([
    fc.array(
      fc.record({ client: fc.constantFrom('a', 'b'), dt: fc.nat(20_000), ok: fc.boolean() }),
      { maxLength: 80 },
    ),
  ])('a client is locked exactly while a model of window and lock says so', (events) => {
    const limiter = createMemoryLimiter(settings);
    let now = 0;
    const failures: Record<string, number[]> = { a: [], b: [] };
    const lockedUntil: Record<string, number> = { a: 0, b: 0 };
    for (const { client, dt, ok } of events) {
      now += dt;
      const expectLocked = (lockedUntil[client] as number) > now;
      const seconds = limiter.lockedFor(client, now);
      expect(seconds > 0).toBe(expectLocked);
      if (expectLocked) {
        expect(seconds).toBeLessThanOrEqual(settings.lockoutSeconds);
        continue; // the guard refuses a locked client before anything is counted
      }
      if (ok) {
        limiter.reset(client);
        failures[client] = [];
        continue;
      }
      limiter.recordFailure(client, now);
      // Model: a fixed window opened by the first failure after a lock or window end.
      const list = failures[client] as number[];
      if (list.length === 0 || now - (list[0] as number) >= 60_000) failures[client] = [now];
      else list.push(now);
      if ((failures[client] as number[]).length >= settings.maxFailures) {
        lockedUntil[client] = now + 30_000;
        failures[client] = [];
      }
    }
  });
});

describe('limiter key', () => {
  it.each([
    ['IPv4 as is', '203.0.113.7', '203.0.113.7'],
    ['IPv6 by its /64', '2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['IPv6 compressed', '2001:db8::1', '2001:db8:0:0::/64'],
    ['IPv6 loopback', '::1', '0:0:0:0::/64'],
    ['IPv6 with a zone id', 'fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['IPv6 with embedded IPv4', '64:ff9b::192.0.2.1', '64:ff9b:0:0::/64'],
    ['leading zeros', '2001:0db8:0001:0002::1', '2001:db8:1:2::/64'],
  ])('%s', (_name, address, key) => {
    expect(limiterKey(address)).toBe(key);
  });

  // Node's BlockList is the independent judge of what lies in a /64.
  test.prop([fc.ipV6(), fc.ipV6()])('addresses share a key exactly when they share a /64', (a, b) => {
    const sameNet = new BlockList();
    sameNet.addSubnet(a, 64, 'ipv6');
    const neighbour = limiterKey(a).replace('::/64', '::1');
    expect(sameNet.check(neighbour, 'ipv6')).toBe(true);
    expect(limiterKey(neighbour)).toBe(limiterKey(a));
    expect(limiterKey(b) === limiterKey(a)).toBe(sameNet.check(b, 'ipv6'));
  });
});
