/**
 * What hookgate publishes about itself on node:diagnostics_channel. The
 * request path and the runtime only publish (and only when someone listens);
 * metrics, the console and the debug log subscribe. Nothing here is payload
 * text or a secret unless a subscriber takes it from the exchange itself.
 */
import { channel } from 'node:diagnostics_channel';
import type { Exchange } from '../ingress/exchange.ts';

/** A request was answered: the exchange as the stages left it. */
export type RequestFinished = {
  exchange: Exchange;
  status: number;
  /** The error code of a refusal. */
  code?: string;
  durationMs: number;
  /** Answered from an earlier acceptance (idempotent replay). */
  replayed: boolean;
};

export const requestFinished = channel('hookgate:request');
