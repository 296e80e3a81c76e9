/**
 * GitHub's signature: `X-Hub-Signature-256: sha256=<lower-case hex>`, an
 * HMAC-SHA256 of the raw body keyed with the UTF-8 secret. The legacy SHA-1
 * `X-Hub-Signature` is never read: a request carrying only that header is
 * treated as unsigned, so nobody can downgrade a route to SHA-1. GitHub signs
 * no timestamp; replays are the idempotency stage's business.
 */
import { createMacVerifier } from './mac-verifier.ts';
import { isRefusal, REFUSED, type Refusal, singleHeader } from './header-access.ts';
import { decodeHex } from './strict-decode.ts';
import type { HeaderValues, Verifier } from './verifier.ts';

/** The header GitHub signs with (lower case, as HeaderValues expects). */
export const GITHUB_SIGNATURE_HEADER = 'x-hub-signature-256';

const PREFIX = 'sha256=';

function presentedSignature(headers: HeaderValues): Buffer | Refusal {
  const header = singleHeader(headers, GITHUB_SIGNATURE_HEADER);
  if (isRefusal(header)) return header;
  if (!header.value.startsWith(PREFIX)) return REFUSED.malformed;
  return decodeHex(header.value.slice(PREFIX.length), 32) ?? REFUSED.malformed;
}

/** A verifier for GitHub deliveries; the secrets are the hook's current and previous ones. */
export function createGithubVerifier(secrets: readonly string[]): Verifier {
  return createMacVerifier(secrets, {
    scheme: 'github',
    algorithm: 'sha256',
    parse(headers) {
      const signature = presentedSignature(headers);
      return isRefusal(signature) ? signature : { signatures: [signature] };
    },
    content: (_parsed, _headers, raw) => [raw],
  });
}
