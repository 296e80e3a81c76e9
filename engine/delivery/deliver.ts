/**
 * Delivering a reply: resolve the route (`last` from the main session, the
 * mapped-hook fallback to whatsapp, the last recipient when `to` is
 * omitted), split the text to the product's limit, and send the parts in
 * order from where an earlier attempt stopped. Retrying is the worker's job,
 * and whether a delivery may move the last route is the runtime's
 * (runtime/last-route.ts); this only reads the route and says what happened.
 */
import type { ChannelAdapter } from './adapter.ts';
import { replyParts } from './split.ts';

/** Where a reply should go, as the action says it. */
export type DeliveryRequest = {
  channel: string;
  to?: string;
  /** Mapped hooks fall back to whatsapp when there is no last route (spec 2.4). */
  fallback: boolean;
};

export type Route = { channel: string; recipient: string; adapter: ChannelAdapter };

/** Whether a reply's own `to` may be sent to on `channel` (hooks.allowedRecipients). */
export type RecipientAllowed = (channel: string, to: string) => boolean;

/** The channel mapped hooks fall back to. */
export const FALLBACK_CHANNEL = 'whatsapp';

/** Resolve a delivery request to a route, or the reason it has none. Pure. */
export function resolveRoute(
  request: DeliveryRequest,
  last: { channel: string; recipient: string } | undefined,
  adapters: ReadonlyMap<string, ChannelAdapter>,
  recipientAllowed?: RecipientAllowed,
): Route | { skipped: string } {
  let channel = request.channel;
  if (channel === 'last') {
    if (last) channel = last.channel;
    else if (request.fallback) channel = FALLBACK_CHANNEL;
    else
      return {
        skipped: 'there is no last route yet (no delivery so far and no session.defaultRoute)',
      };
  }
  const adapter = adapters.get(channel);
  if (!adapter) {
    const why =
      request.channel === 'last' ? ` (fallback for channel "last" without a last route)` : '';
    return { skipped: `channel "${channel}" is not configured${why}` };
  }
  const recipient = request.to ?? (last?.channel === channel ? last.recipient : undefined);
  if (recipient === undefined)
    return { skipped: `no recipient for ${channel}: no "to" and no last recipient on it` };
  const problem = adapter.checkRecipient(recipient);
  if (problem) return { skipped: `recipient is not valid for ${channel}: ${problem}` };
  // Checked at the door against the channel `last` named then; `last` may have moved since.
  if (request.to !== undefined && recipientAllowed && !recipientAllowed(channel, recipient))
    return { skipped: `recipient is not in hooks.allowedRecipients.${channel}` };
  return { channel, recipient: adapter.normaliseRecipient?.(recipient) ?? recipient, adapter };
}

/**
 * Longest recipient a product may move a chat to, whatever the adapter (not
 * every channel's check bounds the length: Slack's id form does not). The
 * longest any channel takes, Teams' conversation ids; real ones are shorter.
 */
export const MAX_MOVED_RECIPIENT_LENGTH = 512;

/**
 * The recipient a product moved the chat to, checked as a configured one is
 * (it is sent to next, recorded, and may become the `last` route), or
 * undefined when the channel would refuse it.
 */
export function movedRecipient(route: Route, movedTo: string): string | undefined {
  if (movedTo.length > MAX_MOVED_RECIPIENT_LENGTH) return undefined;
  if (route.adapter.checkRecipient(movedTo) !== null) return undefined;
  return route.adapter.normaliseRecipient?.(movedTo) ?? movedTo;
}

// C0 but tab, line feed and carriage return; DEL; C1; the bidi embeddings, overrides and
// isolates, which reorder the text after them (a reversed amount, a file name that reads as
// another). The marks (U+200E, U+200F, U+061C) stay: right-to-left text needs them, and they
// move nothing beyond themselves.
const UNSENDABLE_CONTROLS =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding controls is the point.
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** What one delivery attempt achieved. */
export type Attempt = {
  outcome: 'sent' | 'retry' | 'failed';
  /** Where the parts went: the route's recipient, or the new one when the product moved it. */
  recipient: string;
  parts: number;
  partsSent: number;
  reason?: string;
  retryAfterMs?: number;
};

/**
 * Send the parts of `text` from `partsSent` on; `onPart` persists progress after each part, with
 * the recipient it went to (the product may have moved the chat).
 */
export async function sendParts(
  route: Route,
  text: string,
  partsSent: number,
  onPart: (partsSent: number, recipient: string) => void | Promise<void>,
  signal?: AbortSignal,
): Promise<Attempt> {
  const { maxLength, measure, prepareText } = route.adapter;
  // A lone surrogate (a model cut off mid-emoji) as U+FFFD, as the store keeps it: sent as it
  // came, a `\ud83d` escape, products that want UTF-8 (Telegram) refused the whole part. In the
  // head split only (a whole reply of 64 MiB took most of a second); same length, so a resumed
  // delivery splits into the same parts.
  // Control characters other than tab and line ends (an escape sequence, a NUL, a backspace, a
  // right-to-left override, which a payload can get an agent to repeat) arrive as U+FFFD too:
  // in a chat or its notification they can hide, reorder or rewrite the text around them.
  const prepare = (head: string) => {
    const sendable = head.toWellFormed().replace(UNSENDABLE_CONTROLS, '\uFFFD');
    return prepareText ? prepareText.call(route.adapter, sendable) : sendable;
  };
  const parts = replyParts(text, maxLength, measure, prepare);
  let recipient = route.recipient;
  // A move is reported with the outcome, whatever it is, so the new id is recorded.
  let moved: string | undefined;
  const said = (reason?: string) =>
    [reason, moved].filter((part) => part !== undefined).join('; ') || undefined;
  for (let i = partsSent; i < parts.length; i++) {
    // Stopped (shutdown, or the attempt taken over): no part is started, none can duplicate.
    if (signal?.aborted)
      return {
        outcome: 'retry',
        recipient,
        parts: parts.length,
        partsSent: i,
        reason: said('interrupted before this part was sent') as string,
      };
    const result = await route.adapter.send(recipient, parts[i] as string, signal);
    const at = { recipient, parts: parts.length, partsSent: i };
    if (result.status === 'retry') {
      return {
        outcome: 'retry',
        ...at,
        reason: said(result.reason) as string,
        ...(result.retryAfterMs !== undefined && { retryAfterMs: result.retryAfterMs }),
      };
    }
    if (result.status === 'failed')
      return { outcome: 'failed', ...at, reason: said(result.reason) as string };
    if (result.movedTo !== undefined && result.movedTo !== recipient) {
      const next = movedRecipient(route, result.movedTo);
      if (next === undefined) {
        // The part went out, but to where this channel takes no recipient: nothing follows it
        // there (no later part, no record of it, no route); its progress stays on the old one.
        await onPart(i + 1, recipient);
        const reason = `${route.channel} said the chat moved, to a recipient that is not valid for it; not followed`;
        return { outcome: 'failed', ...at, partsSent: i + 1, reason: said(reason) as string };
      }
      moved = `the chat moved from ${recipient} to ${next}; update the recipient`;
      recipient = next;
    }
    await onPart(i + 1, recipient);
  }
  const reason = said();
  return {
    outcome: 'sent',
    recipient,
    parts: parts.length,
    partsSent: parts.length,
    ...(reason !== undefined && { reason }),
  };
}
