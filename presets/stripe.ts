/**
 * The `stripe` preset: a Stripe webhook endpoint posting to
 * `<hooks_path>/stripe`, signed with `Stripe-Signature`. Stripe sends only the
 * event types selected for the endpoint in its dashboard, so every event
 * wakes an agent (none is ignored here: choose the types there). The message
 * opens with one line (type, object, amount, customer, live or test) and
 * lists the essentials. One session per customer (`hook:stripe:<cus_...>`;
 * a customer.* event's own object is the customer); events about no customer
 * share `hook:stripe:account`. Thin events (`v2.core.event`) name their object
 * instead of carrying it.
 */
import type { Mapping } from '../schemas/mapping.ts';

const OBJECT = 'payload.data.object';

// The amount that matters for the object: its amount, else what is due, else the total (zero
// is an amount: a trial's invoice is due 0.00).
const AMOUNT = ['amount', 'amount_due', 'amount_total']
  .map(
    (field, i) =>
      `{{${i === 0 ? '#if' : 'else if'} (present ${OBJECT}.${field})}} {{money ${OBJECT}.${field} ${OBJECT}.currency}}`,
  )
  .join('')
  .concat('{{/if}}');

// The email the object names: an invoice's or a checkout session's customer_email, a charge's or
// a payment intent's receipt_email, a customer's own, a checkout session's customer details.
const EMAIL = ['customer_email', 'receipt_email', 'email', 'customer_details.email']
  .map((field) => `${OBJECT}.${field}`)
  .reduceRight((inner, path) => `(default ${path} ${inner})`);

const MODE = '{{#if payload.livemode}}live{{else}}test{{/if}}';

const summary = (customer: string) =>
  [
    'Stripe {{truncate (oneLine payload.type) 80}}: ',
    `{{truncate (oneLine ${OBJECT}.object) 40}} {{truncate (oneLine ${OBJECT}.id) 80}}`,
    AMOUNT,
    `{{#if ${customer}}} for {{truncate (oneLine ${customer}) 80}}{{/if}}`,
    ` (${MODE})\n`,
  ].join('');

// A `Label: value` line, present only when the value is.
const fact = (label: string, path: string) =>
  `{{#if (present ${path})}}${label}: {{truncate (oneLine ${path}) 300}}\n{{/if}}`;
// An amount's line, zero included.
const amount = (label: string, field: string) =>
  `{{#if (present ${OBJECT}.${field})}}${label}: {{money ${OBJECT}.${field} ${OBJECT}.currency}}\n{{/if}}`;

const facts = (customer: string) =>
  [
    fact('Event', 'payload.id'),
    fact('Type', 'payload.type'),
    fact('Object', `${OBJECT}.object`),
    fact('Object id', `${OBJECT}.id`),
    amount('Amount', 'amount'),
    amount('Amount due', 'amount_due'),
    amount('Amount paid', 'amount_paid'),
    // Every charge carries amount_refunded, 0 until a refund: a line only once there is one
    // ("Refunded: 0.00" on each charge.succeeded read like a refund).
    `{{#if ${OBJECT}.amount_refunded}}Refunded: {{money ${OBJECT}.amount_refunded ${OBJECT}.currency}}\n{{/if}}`,
    amount('Total', 'amount_total'),
    fact('Customer', customer),
    fact('Email', EMAIL),
    fact('Status', `${OBJECT}.status`),
    fact('Description', `${OBJECT}.description`),
    fact('Failure', `(default ${OBJECT}.last_payment_error.message ${OBJECT}.failure_message)`),
    fact('Reason', `${OBJECT}.cancellation_details.reason`),
    fact('Invoice URL', `${OBJECT}.hosted_invoice_url`),
    fact('Connected account', 'payload.account'),
    `Mode: ${MODE}\n`,
  ].join('');

function agent(id: string, when: Record<string, unknown> | undefined, customer: string): Mapping {
  return {
    id,
    match: { path: 'stripe', ...(when && { when }) },
    action: 'agent',
    name: 'Stripe',
    label: 'Stripe',
    wakeMode: 'now',
    templates: {
      message: summary(customer) + facts(customer),
      sessionKey: `hook:stripe:{{keySegment (default ${customer} "account")}}`,
    },
  };
}

const thin: Mapping = {
  id: 'stripe-thin',
  match: { path: 'stripe', when: { '==': [{ var: 'payload.object' }, 'v2.core.event'] } },
  action: 'agent',
  name: 'Stripe',
  label: 'Stripe',
  wakeMode: 'now',
  templates: {
    message: [
      'Stripe {{truncate (oneLine payload.type) 80}}: {{truncate (oneLine payload.related_object.type) 40}} {{truncate (oneLine payload.related_object.id) 80}} ({{#if payload.livemode}}live{{else}}test{{/if}})\n',
      fact('Event', 'payload.id'),
      fact('Object', 'payload.related_object.type'),
      fact('Object id', 'payload.related_object.id'),
      fact('Fetch', 'payload.related_object.url'),
    ].join(''),
    sessionKey: 'hook:stripe:account',
  },
};

/** The preset's mappings, in matching order: thin events, customer objects, everything else. */
export const stripeMappings: readonly Mapping[] = Object.freeze([
  thin,
  agent('stripe-customer', { '==': [{ var: `${OBJECT}.object` }, 'customer'] }, `${OBJECT}.id`),
  agent('stripe', undefined, `${OBJECT}.customer`),
]);
