/**
 * Where a route finds the sender's delivery id, the key that makes a
 * provider's retry or redelivery a replay: its scheme's own carrier
 * (engine/auth/schemes.ts), or a mapping's `idempotencyKey` template over the
 * verified request. The id says whether the signature covers it.
 */
import type { AuthScheme } from '../../schemas/auth.ts';
import { type IdCarrier, SCHEMES } from '../auth/schemes.ts';
import type { HeaderValues } from '../auth/verifier.ts';
import type { Envelope } from '../envelope.ts';
import { tooLarge } from '../mapped-fields.ts';
import { ruleData } from '../mapped-route.ts';
import { RenderBudget, RenderLimitError, type RenderLimits } from '../render-budget.ts';
import { compileTemplate, pathsRead } from '../templates.ts';

/** A delivery id, and whether the signature covers it (if not, a replay may carry a fresh one). */
export type DeliveryId = { id: string; signed: boolean };

/**
 * The delivery id of a verified request, or undefined when it carries none; `headers`: the
 * headers it is read from (lower case), each refused when sent twice, before the body is read.
 */
export type DeliveryIdRule = ((
  envelope: Envelope,
  headers: HeaderValues,
) => DeliveryId | undefined) & {
  readonly headers: readonly string[];
};

function carried(
  carrier: IdCarrier,
  envelope: Envelope,
  headers: HeaderValues,
): string | undefined {
  if ('headers' in carrier) {
    for (const name of carrier.headers) {
      const [value] = headers(name);
      if (value !== undefined && value !== '') return value;
    }
    return undefined;
  }
  const payload = envelope.payload;
  const value = Object.hasOwn(payload, carrier.payload) ? payload[carrier.payload] : undefined;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * The rule for a route: its template (that of mapping `mappingId`, rendered within `limits`) if
 * it has one, else its scheme's carrier, else none.
 */
export function deliveryIdRule(
  scheme: AuthScheme,
  template: string | undefined,
  mappingId = '',
  limits?: RenderLimits,
): DeliveryIdRule | undefined {
  const facts = SCHEMES[scheme];
  if (template === undefined) {
    const carrier = facts.deliveryId;
    if (!carrier) return undefined;
    const rule = (envelope: Envelope, headers: HeaderValues) => {
      const id = carried(carrier, envelope, headers);
      return id === undefined ? undefined : { id, signed: facts.idSigned };
    };
    return Object.assign(rule, { headers: 'headers' in carrier ? carrier.headers : [] });
  }
  const render = compileTemplate(template);
  // A template may read anything, signed or not: never trusted to stand for the signed content.
  const rule = (envelope: Envelope) => {
    let id: string;
    try {
      id = render(ruleData(envelope), new RenderBudget(limits)).trim();
    } catch (err) {
      // A payload that takes the key over the render bounds is the sender's doing (400), not ours.
      if (err instanceof RenderLimitError) throw tooLarge({ id: mappingId }, 'idempotencyKey', err);
      throw err;
    }
    return id === '' ? undefined : { id, signed: false };
  };
  return Object.assign(rule, { headers: headersRead(template) });
}

/** In a rule's `headers`: the template reads the headers as a whole, so every one counts. */
export const EVERY_HEADER = '*';

// Node joins a repeated header's values with ", " in the headers a template reads: a doubled
// id header would give an id of its own to a replay. `headers` used whole (`lookup headers
// "x-id"`, `#with headers`, `json headers`) may read any of them.
function headersRead(template: string): string[] {
  const names = new Set<string>();
  for (const [first, name] of pathsRead(template)) {
    if (first !== 'headers') continue;
    names.add(name === undefined ? EVERY_HEADER : name.toLowerCase());
  }
  return names.has(EVERY_HEADER) ? [EVERY_HEADER] : [...names];
}
