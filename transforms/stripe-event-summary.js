/**
 * Example transform (JavaScript): a summary of Stripe-like billing events.
 *
 * Mapping:
 *   - id: stripe
 *     match: { path: stripe }
 *     action: wake
 *     transform: { module: stripe-event-summary.js, export: summarise }
 *
 * Failed payments wake the agent now; paid invoices are noted for the next
 * heartbeat; other event types are dropped (null: 204).
 */

function money(amount, currency) {
  return `${(amount / 100).toFixed(2)} ${String(currency ?? '').toUpperCase()}`;
}

export function summarise({ payload }) {
  const invoice = payload?.data?.object ?? {};
  const who =
    invoice.customer_name ?? invoice.customer_email ?? invoice.customer ?? 'unknown customer';
  switch (payload?.type) {
    case 'invoice.payment_failed':
      return {
        kind: 'wake',
        mode: 'now',
        text: `Payment failed for ${who}: ${money(invoice.amount_due, invoice.currency)} (attempt ${invoice.attempt_count ?? 1}). ${invoice.hosted_invoice_url ?? ''}`.trim(),
      };
    case 'invoice.paid':
      return {
        kind: 'wake',
        mode: 'next-heartbeat',
        text: `Invoice paid by ${who}: ${money(invoice.amount_paid, invoice.currency)}.`,
      };
    default:
      return null;
  }
}
