/**
 * The signature schemes by name (placeholder until the schemes land).
 */
import type { RouteAuth } from '../../schemas/auth.ts';
import { ConfigError } from '../config.ts';
import type { Verifier } from './verifier.ts';

/** Build the verifier of an auth block; a ConfigError under `at` for what cannot work. */
export function createVerifier(auth: RouteAuth, at: string): Verifier {
  throw new ConfigError(`${at}.scheme`, `scheme "${auth.scheme}" is not available`);
}
