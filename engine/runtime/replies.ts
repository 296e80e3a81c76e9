/**
 * Pure decisions about replies: is it only the heartbeat acknowledgment,
 * how a run is summarised in the main session, how long to wait before a
 * retry.
 */

/** True when a reply is only the ack token, allowing whitespace and light markup around it. */
export function isAckOnly(reply: string, ackToken: string): boolean {
  const stripped = reply
    .replace(/<\/?[a-z][^>]*>/gi, '')
    .replace(/^[\s*_`~#>"'.!-]+|[\s*_`~#>"'.!-]+$/g, '');
  return stripped === ackToken;
}

const SUMMARY_MAX = 280;

/** One line for the main session: `Hook <name>: <summary>`, or `(error)` / `(timeout)` with the reason. */
export function summaryLine(
  name: string,
  outcome: { status: 'ok' | 'error' | 'timeout'; text: string },
): string {
  // One line: a hook name or reply with line breaks cannot forge a `System:` line of its own.
  const label = name.replace(/\s+/g, ' ').trim() || 'Hook';
  const flat = outcome.text.replace(/\s+/g, ' ').trim();
  const short =
    flat.length > SUMMARY_MAX ? `${flat.slice(0, SUMMARY_MAX - 1)}…` : flat || '(empty reply)';
  if (outcome.status === 'ok') return `Hook ${label}: ${short}`;
  return `Hook ${label} (${outcome.status}): ${short}`;
}

/** Exponential backoff with full jitter, at least the server's Retry-After, capped. */
export function retryDelayMs(
  attempt: number,
  settings: { baseDelayMs: number; maxDelayMs: number },
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  const exponential = Math.min(
    settings.maxDelayMs,
    settings.baseDelayMs * 2 ** Math.max(0, attempt - 1),
  );
  const jittered = exponential / 2 + random() * (exponential / 2);
  return Math.min(settings.maxDelayMs, Math.max(jittered, retryAfterMs ?? 0));
}
