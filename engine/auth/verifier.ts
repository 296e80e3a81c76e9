/**
 * What every signature scheme implements: a check from the headers alone
 * (before a byte of the body is read) and a verification over the raw body
 * bytes. Failures are data: the caller answers every one with the same 401
 * and logs only the failure's name, never a header value or a secret.
 */
import type { AuthScheme } from '../../schemas/auth.ts';

/** Every occurrence of a header, by lower-case name (empty when absent). */
export type HeaderValues = (name: string) => readonly string[];

/** Why a request was not authenticated (logged, never shown to the caller). */
export type AuthFailure =
  /** A required header is absent. */
  | 'missing'
  /** A signature, timestamp or id header occurs more than once. */
  | 'duplicate'
  /** A header's value is not of the scheme's form (bad prefix, encoding, length, count). */
  | 'malformed'
  /** The signed timestamp lies outside the tolerance, in either direction. */
  | 'stale'
  /** No presented signature matches any secret. */
  | 'mismatch';

/** What a successful verification proves; stored with the action as its provenance. */
export type Verified = {
  scheme: AuthScheme;
  /** Which configured secret matched (0 = `secret` or `secrets[0]`). */
  secretIndex: number;
  /** The signed timestamp (unix seconds), for schemes that sign one. */
  timestamp?: number;
  /** Seconds between the signed timestamp and arrival (positive: signed in the past). */
  skewSeconds?: number;
};

export type Verifier = {
  scheme: AuthScheme;
  /** From the headers alone: required headers present once and well formed, timestamp in the window. */
  precheck(headers: HeaderValues, nowSeconds: number): AuthFailure | undefined;
  /** Over the raw body: constant-time, any configured secret against any presented signature. */
  verify(headers: HeaderValues, raw: Buffer, nowSeconds: number): Verified | AuthFailure;
};
