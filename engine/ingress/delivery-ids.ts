/**
 * Where a route finds the sender's delivery id, the key that makes a
 * provider's retry or redelivery a replay: each signature scheme's own
 * carrier, or a mapping's `idempotencyKey` template over the verified request.
 */
import type { AuthScheme } from '../../schemas/auth.ts';
import type { HeaderValues } from '../auth/verifier.ts';
import type { Envelope } from '../envelope.ts';
import { ruleData } from '../mapped-route.ts';
import { compileTemplate } from '../templates.ts';

/** The delivery id of a verified request, or undefined when it carries none. */
export type DeliveryIdRule = (envelope: Envelope, headers: HeaderValues) => string | undefined;

const fromHeader =
  (...names: string[]): DeliveryIdRule =>
  (_envelope, headers) => {
    for (const name of names) {
      const [value] = headers(name);
      if (value !== undefined && value !== '') return value;
    }
    return undefined;
  };

const fromPayload =
  (field: string): DeliveryIdRule =>
  (envelope) => {
    const value = Object.hasOwn(envelope.payload, field) ? envelope.payload[field] : undefined;
    return typeof value === 'string' && value !== '' ? value : undefined;
  };

// Each scheme's own id: what the provider keeps the same across its retries.
const SCHEME_IDS: Partial<Record<AuthScheme, DeliveryIdRule>> = {
  github: fromHeader('x-github-delivery'),
  'standard-webhooks': fromHeader('webhook-id', 'svix-id'),
  stripe: fromPayload('id'),
  slack: fromPayload('event_id'),
};

/** The rule for a route: its template if it has one, else its scheme's carrier, else none. */
export function deliveryIdRule(
  scheme: AuthScheme,
  template: string | undefined,
): DeliveryIdRule | undefined {
  if (template === undefined) return SCHEME_IDS[scheme];
  const render = compileTemplate(template);
  return (envelope) => {
    const id = render(ruleData(envelope)).trim();
    return id === '' ? undefined : id;
  };
}
