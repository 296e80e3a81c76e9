/**
 * How long the ledger remembers that a Gmail message ran, at the least: a week, Pub/Sub's
 * longest redelivery (longer when `hooks.deliveryRetentionSeconds` says so). Shared by the
 * emitter, which keeps the key, and the fallback sync, which must not read mail older than
 * the key's memory as new.
 */
export const MESSAGE_MEMORY_MS = 7 * 24 * 60 * 60 * 1000;
