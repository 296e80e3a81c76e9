/**
 * Which client a trusted proxy's X-Forwarded-For names, as properties: a hop
 * with a port or brackets is its address; a hop that is no address is a
 * client of its own under a bounded key; and no list of hops, whatever its
 * text, ever makes the proxy itself the client.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { createClientAddressResolver, hopAddress } from '../engine/client-address.ts';

const PROXY = '192.0.2.1';
const resolve = createClientAddressResolver([PROXY, '198.51.100.0/24']);

const ipv4 = fc.ipV4();
const ipv6 = fc.ipV6();
const port = fc.integer({ min: 0, max: 65_535 });
// Untrusted client addresses (outside the proxy's address and range).
const clientV4 = ipv4.filter((ip) => ip !== PROXY && !ip.startsWith('198.51.100.'));
// Any header text a hop may hold (no comma: that separates hops), long ones too.
const hopText = fc.string({ unit: 'binary', maxLength: 400 }).map((s) => s.replaceAll(',', ''));
// Hops as proxies write them and as senders forge them: addresses, ports, brackets, garbage.
const anyHop = fc.oneof(
  hopText,
  ipv4,
  fc.tuple(ipv4, port).map(([ip, p]) => `${ip}:${p}`),
  fc.tuple(ipv6, port).map(([ip, p]) => `[${ip}]:${p}`),
  fc.constantFrom(PROXY, `${PROXY}:443`, '198.51.100.9', `::ffff:${PROXY}`, '', ' unknown '),
);
const trusted = (address: string) => address === PROXY || address.startsWith('198.51.100.');

describe('forwarded hops', () => {
  test.prop([ipv4, port])('an IPv4 hop with a port is its address', (ip, p) => {
    expect(hopAddress(`${ip}:${p}`)).toBe(ip);
    expect(hopAddress(ip)).toBe(ip);
  });

  test.prop([ipv6, fc.option(port)])(
    'a bracketed IPv6 hop, with or without a port, is its address',
    (ip, p) => {
      const hop = p === null ? `[${ip}]` : `[${ip}]:${p}`;
      const bare = hopAddress(ip);
      expect(bare).toBeDefined();
      expect(hopAddress(hop)).toBe(bare);
    },
  );

  test.prop([clientV4, port, fc.array(fc.constantFrom(PROXY, '198.51.100.7'), { maxLength: 3 })])(
    'the nearest untrusted hop is the client, its port dropped, behind any trusted hops',
    (ip, p, proxies) => {
      const forwarded = [`${ip}:${p}`, ...proxies].join(', ');
      expect(resolve(PROXY, forwarded)).toBe(ip);
    },
  );

  test.prop([fc.array(anyHop, { maxLength: 6 })])(
    'the proxy is the client only when every hop names a trusted proxy; every key is bounded',
    (hops) => {
      const client = resolve(PROXY, hops.join(','));
      const allTrusted = hops
        .map((hop) => hop.trim())
        .filter((hop) => hop !== '')
        .every((hop) => {
          const address = hopAddress(hop);
          return address !== undefined && trusted(address);
        });
      if (!allTrusted) expect(trusted(client)).toBe(false);
      expect(client.length).toBeLessThanOrEqual('hop:'.length + 64);
    },
  );

  test.prop([
    hopText.filter((text) => hopAddress(text.trim()) === undefined && text.trim() !== ''),
  ])('a hop that is no address is a client of its own, keyed by its text', (text) => {
    const client = resolve(PROXY, text);
    expect(client).toBe(`hop:${text.trim().slice(0, 64)}`);
    expect(resolve(PROXY, `${text}, ${PROXY}`)).toBe(client);
  });

  test.prop([clientV4, hopText])(
    'from a peer that is not trusted, X-Forwarded-For is ignored',
    (peer, forwarded) => {
      expect(resolve(peer, forwarded)).toBe(peer);
    },
  );
});
