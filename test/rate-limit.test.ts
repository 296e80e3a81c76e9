/**
 * The failed-auth limiter: the memory one against the contract, its bounded
 * memory, and the limiter key.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { BlockList } from 'node:net';
import { limiterKey } from '../engine/client-address.ts';
import { countingRefusedFailures } from '../engine/limiter-fallback.ts';
import { createLogger } from '../engine/log.ts';
import {
  type AuthFailureLimiter,
  createMemoryLimiter,
  reportingStoreErrors,
} from '../engine/rate-limit.ts';
import { contractSettings as settings, describeLimiter, fail } from './limiter-contract.ts';

describeLimiter('memory', async (given) => createMemoryLimiter(given));

/** A shared store that is down: it knows no lock and refuses every write. */
const refusingStore: AuthFailureLimiter = {
  lockedFor: () => 0,
  hasFailures: () => false,
  recordFailure: () => Promise.reject(new Error('connect ECONNREFUSED')),
  reset: () => Promise.reject(new Error('connect ECONNREFUSED')),
  close: async () => {},
};

// An outage of the shared store: the failures it refused are counted by the instance, as the
// memory limiter counts them.
describeLimiter('a shared store that refuses every write', async (given) =>
  reportingStoreErrors(countingRefusedFailures(refusingStore, given), createLogger('silent')),
);

describe('memory limiter', () => {
  it('stays bounded: a flood of counting addresses forgets the oldest count', async () => {
    const limiter = createMemoryLimiter({ ...settings, maxClients: 10 });
    await fail(limiter, 'victim', 0, 2);
    for (let i = 0; i < 10; i++) await fail(limiter, `flood-${i}`, 0);
    await fail(limiter, 'victim', 1);
    expect(limiter.lockedFor('victim', 1)).toBe(0);
  });

  it('a flood of fresh addresses cannot push out a lock', async () => {
    const limiter = createMemoryLimiter({ ...settings, maxClients: 10 });
    await fail(limiter, 'guesser', 0, 3);
    for (let i = 0; i < 1000; i++) await fail(limiter, `flood-${i}`, 1, 2);
    expect(limiter.lockedFor('guesser', 2)).toBe(30);
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
  test.prop([fc.ipV6(), fc.ipV6()])(
    'addresses share a key exactly when they share a /64',
    (a, b) => {
      const sameNet = new BlockList();
      sameNet.addSubnet(a, 64, 'ipv6');
      const neighbour = limiterKey(a).replace('::/64', '::1');
      expect(sameNet.check(neighbour, 'ipv6')).toBe(true);
      expect(limiterKey(neighbour)).toBe(limiterKey(a));
      expect(limiterKey(b) === limiterKey(a)).toBe(sameNet.check(b, 'ipv6'));
    },
  );
});
