/**
 * Who may use the admin listener: the token (constant-time), and the Host,
 * Origin and Sec-Fetch-Site checks that keep a web page the operator visits
 * from using the console on their behalf (CSRF, DNS rebinding, blind
 * cross-site requests). Pure decisions.
 */
import { createTokenCheck } from '../auth.ts';
import { isLoopbackHost } from '../config-rules.ts';
import type { AdminRefused } from '../observe/events.ts';
import type { AdminErrorCode } from './admin-errors.ts';

export type GuardedRequest = {
  method: string;
  host: string | undefined;
  origin: string | undefined;
  authorization: string | undefined;
  /** Sec-Fetch-Site, as browsers send it (absent from other clients). */
  fetchSite: string | undefined;
  /** The route needs the token (everything but the page and its files). */
  needsToken: boolean;
};

// A request another site's page made: a browser says so in Sec-Fetch-Site, even for the blind
// (no-cors) GETs a page may send anywhere. `same-site` includes another port of localhost.
const OTHER_SITE: ReadonlySet<string> = new Set(['cross-site', 'same-site']);

/** What the guard refuses with (each one of the admin listener's error codes). */
export type GuardRefusal = Extract<AdminErrorCode, AdminRefused['code']>;

/** The guard of one admin listener: undefined lets the request through. */
export type Guard = (request: GuardedRequest) => GuardRefusal | undefined;

const BEARER = /^Bearer +(\S+) *$/i;

/** A guard for the configured token (undefined: loopback only, no token). */
export function createGuard(token: string | undefined): Guard {
  const matches = token === undefined ? undefined : createTokenCheck(token);
  return function guard(request) {
    // Without a token the only protection is that the page is served to loopback names: a
    // rebinding attacker's page sends its own host name, which is refused here.
    if (!matches && !loopbackAuthority(request.host)) return 'forbidden_host';
    // Without a token, a hostile page's blind GETs would still run (readiness probes the store;
    // a filtered list reads it): a route beyond the page and its files is only for the
    // console's own page, tools and the operator's address bar.
    if (request.needsToken && OTHER_SITE.has(request.fetchSite?.toLowerCase() ?? '')) {
      return 'forbidden_origin';
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      if (request.origin !== undefined && !sameOrigin(request.origin, request.host)) {
        return 'forbidden_origin';
      }
    }
    if (matches && request.needsToken) {
      // A cross-site form or an <img> cannot set Authorization: the header is the CSRF guard.
      const presented = BEARER.exec(request.authorization ?? '')?.[1] ?? '';
      if (!matches({ kind: 'token', token: presented })) return 'unauthorized';
    }
    return undefined;
  };
}

/** True for a Host header naming a loopback address or localhost (any port). Pure. */
export function loopbackAuthority(host: string | undefined): boolean {
  if (host === undefined) return false;
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0];
  return name !== undefined && name !== '' && isLoopbackHost(name);
}

/** True when an Origin header names the very host the request was sent to. Pure. */
export function sameOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  try {
    const url = new URL(origin);
    return (
      (url.protocol === 'http:' || url.protocol === 'https:') &&
      url.host.toLowerCase() === host.toLowerCase()
    );
  } catch {
    return false;
  }
}
