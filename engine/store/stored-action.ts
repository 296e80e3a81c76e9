/**
 * An action as a store row keeps it. The wrapped prompt is left out: it is
 * the request's text under the security notice and the wrapper's markers,
 * which the text, the wrapper's id and its label (all kept) build again
 * exactly, as long as the wrapper's code is the same (after an upgrade that
 * changed it, a queued action gets the new wrapping). It was about 40% of a
 * wake's row and a third of the bytes a wake wrote; a wake's event and a
 * finished run's turns keep the text the agent was given word for word.
 * Pure.
 */
import type { Action } from '../../schemas/action.ts';
import { DEFAULT_LABEL, isWrapperId, rewrap, wrapUntrusted } from '../safety.ts';

/** The row's JSON of an action built by engine/actions.ts: without its wrapped prompt. */
export function storedActionJson(action: Action): string {
  if (action.prompt === undefined || action.safety === undefined) return JSON.stringify(action);
  const { prompt: _rebuilt, ...kept } = action;
  return JSON.stringify(kept);
}

/**
 * A row's parsed action with its wrapped prompt back. An untrusted action whose row lacks the
 * wrapper's parts, holds an id no wrapper has (it goes inside the markers, so it could close
 * them) or a prompt that is no string (another writer, damage) is wrapped afresh rather than
 * given to the agent as it is. Anything that is not an untrusted action without a prompt is
 * returned unchanged.
 */
export function restoredAction<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  const action = value as Record<string, unknown>;
  if (action['untrusted'] !== true || typeof action['prompt'] === 'string') return value;
  const content = action['kind'] === 'agent' ? action['message'] : action['text'];
  if (typeof content !== 'string') return value;
  const safety = action['safety'] as { wrapperId?: unknown; label?: unknown } | undefined;
  const { wrapperId, label } = safety ?? {};
  action['prompt'] =
    typeof wrapperId === 'string' && isWrapperId(wrapperId) && typeof label === 'string'
      ? rewrap(content, label, wrapperId)
      : wrapUntrusted(content, DEFAULT_LABEL).text;
  return value;
}

/** A row's action JSON parsed, its wrapped prompt rebuilt (throws on text that is not JSON). */
export function parseStoredAction(json: string): Action {
  return restoredAction(JSON.parse(json) as Action);
}
