/**
 * The one Retry-After parser for every outbound answer (runners, channel
 * APIs, token endpoints): delay-seconds (decimals tolerated) or an HTTP date.
 */

/** Milliseconds from a Retry-After header; undefined when absent or invalid. */
export function retryAfterMs(
  value: string | string[] | undefined,
  nowMs = Date.now(),
): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.ceil(Number(text) * 1000);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}
