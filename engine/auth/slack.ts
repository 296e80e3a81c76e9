/**
 * Slack's signature: `X-Slack-Signature: v0=<lower-case hex>`, an
 * HMAC-SHA256 keyed with the signing secret's UTF-8 bytes over
 * `v0:<X-Slack-Request-Timestamp as received>:<raw body>`. The timestamp must
 * be canonical seconds within the tolerance either side of now (Slack's own
 * SDK checks only the past; a future stamp would lengthen a replay's life).
 */
import { createMacVerifier } from './mac-verifier.ts';
import { headerBytes, isRefusal, REFUSED, type Refusal, singleHeader } from './header-access.ts';
import { decodeHex } from './strict-decode.ts';
import { checkWindow, type InWindow } from './timestamp.ts';
import type { HeaderValues, Verifier } from './verifier.ts';

/** The signature header (lower case). */
export const SLACK_SIGNATURE_HEADER = 'x-slack-signature';
/** The signed timestamp header (lower case). */
export const SLACK_TIMESTAMP_HEADER = 'x-slack-request-timestamp';

const PREFIX = 'v0=';

type SlackHeaders = InWindow & { stamp: string; signature: Buffer };

function parseHeaders(
  headers: HeaderValues,
  nowSeconds: number,
  toleranceSeconds: number,
): SlackHeaders | Refusal {
  const signatureHeader = singleHeader(headers, SLACK_SIGNATURE_HEADER);
  if (isRefusal(signatureHeader)) return signatureHeader;
  const stampHeader = singleHeader(headers, SLACK_TIMESTAMP_HEADER);
  if (isRefusal(stampHeader)) return stampHeader;
  const value = signatureHeader.value;
  const signature = value.startsWith(PREFIX)
    ? decodeHex(value.slice(PREFIX.length), 32)
    : undefined;
  if (signature === undefined) return REFUSED.malformed;
  const window = checkWindow(stampHeader.value, nowSeconds, toleranceSeconds);
  if (isRefusal(window)) return window;
  return { ...window, stamp: stampHeader.value, signature };
}

/** A verifier for Slack requests (Events API, slash commands, interactivity). */
export function createSlackVerifier(
  secrets: readonly string[],
  toleranceSeconds: number,
): Verifier {
  return createMacVerifier(secrets, {
    scheme: 'slack',
    algorithm: 'sha256',
    parse(headers, nowSeconds) {
      const parsed = parseHeaders(headers, nowSeconds, toleranceSeconds);
      if (isRefusal(parsed)) return parsed;
      const { timestamp, skewSeconds } = parsed;
      return { ...parsed, signatures: [parsed.signature], window: { timestamp, skewSeconds } };
    },
    content: (parsed, _headers, raw) => ['v0:', headerBytes(parsed.stamp), ':', raw],
  });
}
