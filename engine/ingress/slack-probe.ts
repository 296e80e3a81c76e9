/**
 * Slack's SSL check: Slack POSTs `ssl_check=1&token=...` (form-encoded) to a slash command's
 * Request URL to test its certificate, and sends it unsigned (no X-Slack-Signature or
 * X-Slack-Request-Timestamp; Slack's own SDK skips verification for it). Such a request may
 * come through to a bounded read of its small body and is answered 200 when the body is that
 * check and nothing else; anything else unsigned is the usual counted 401. Pure.
 */
import { SLACK_SIGNATURE_HEADER, SLACK_TIMESTAMP_HEADER } from '../auth/slack.ts';
import type { HeaderValues } from '../auth/verifier.ts';

/** An SSL check's body is about 40 bytes; an unsigned body past this is never read. */
export const MAX_PROBE_BYTES = 256;

const FORM = 'application/x-www-form-urlencoded';
const PROBE_FIELDS: ReadonlySet<string> = new Set(['ssl_check', 'token']);

/** Whether an unsigned request to a Slack route may be an SSL check, from its headers alone. */
export function maySslCheck(headers: HeaderValues): boolean {
  if (headers(SLACK_SIGNATURE_HEADER).length > 0 || headers(SLACK_TIMESTAMP_HEADER).length > 0)
    return false;
  const [type] = headers('content-type');
  const [length] = headers('content-length');
  if (type === undefined || length === undefined || headers('content-length').length > 1)
    return false;
  const mediaType = type.split(';', 1)[0]?.trim().toLowerCase();
  return mediaType === FORM && /^\d{1,3}$/.test(length) && Number(length) <= MAX_PROBE_BYTES;
}

/** Whether a body is Slack's SSL check: `ssl_check=1`, with at most its legacy token beside it. */
export function isSslCheck(raw: Buffer): boolean {
  if (raw.length > MAX_PROBE_BYTES) return false;
  const fields = new URLSearchParams(raw.toString('latin1'));
  const names = [...fields.keys()];
  return (
    fields.getAll('ssl_check').length === 1 &&
    fields.get('ssl_check') === '1' &&
    names.length === new Set(names).size &&
    names.every((name) => PROBE_FIELDS.has(name))
  );
}
