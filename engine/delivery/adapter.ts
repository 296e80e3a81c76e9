/**
 * The interface of a channel adapter: what delivery needs to post one text
 * to one recipient through a messaging product's real HTTP API. Adapters
 * send single parts; splitting, pacing, retries and routes are shared
 * (engine/delivery/). Each adapter runs the shared contract suite.
 */
import type { ChannelId } from '../../schemas/config.ts';

/** The outcome of sending one part. */
export type SendResult =
  /**
   * `movedTo`: the product moved the recipient (a Telegram group became a supergroup); delivery
   * checks it as a configured recipient before it is used or recorded.
   */
  | { status: 'sent'; messageId?: string; movedTo?: string }
  /** The message did not go out and may be sent again (rate limit, 5xx, connection error). */
  | { status: 'retry'; reason: string; retryAfterMs?: number }
  /** Sending again will not help (auth, unknown recipient, bad request). */
  | { status: 'failed'; reason: string };

export type ChannelAdapter = {
  id: ChannelId;
  /** Longest part the product takes, in UTF-16 code units (a safe count for every product). */
  maxLength: number;
  /**
   * A part's length as the product counts it against `maxLength`, where that is not its own
   * (Teams: as escaped in the activity's JSON; Slack: with `&`, `<`, `>` as entities); never
   * less than its UTF-16 code units.
   */
  measure?(part: string): number;
  /** Why `to` is not a valid recipient for this product, or null when it is. */
  checkRecipient(to: string): string | null;
  /** The recipient in the form the API wants (e.g. an iMessage chat GUID from a phone number). */
  normaliseRecipient?(to: string): string;
  /**
   * The conversation a recipient posts into, where it names a part of one (a Slack thread's
   * channel): an allowlist entry for the conversation covers its parts.
   */
  conversationOf?(to: string): string;
  /**
   * The reply (a head of it long enough for the parts sent, split.ts) as the product must get it
   * to act as plain text would (no mass mention, no image loaded, no link hiding its address);
   * applied before splitting, so what it adds counts in the parts' length.
   */
  prepareText?(text: string): string;
  /**
   * Post one part. Never puts tokens, token-bearing URLs or the text in `reason`; what of the
   * product's answer enters it goes through engine/outbound/answer-detail.ts.
   */
  send(to: string, text: string, signal?: AbortSignal): Promise<SendResult>;
};

/** Builds an adapter from its validated settings (`channels.<id>` in the config). */
export type AdapterFactory = (settings: Record<string, unknown>) => ChannelAdapter;
