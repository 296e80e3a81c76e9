/**
 * Amounts in a currency's minor units (what payment APIs send: 1999 with
 * `usd` is 19.99 USD) as readable text, for the `money` template helper.
 * Most currencies have two decimals; the tables name those with none or
 * three, as payment providers list them.
 */

const ZERO_DECIMAL: ReadonlySet<string> = new Set([
  'BIF',
  'CLP',
  'DJF',
  'GNF',
  'JPY',
  'KMF',
  'KRW',
  'MGA',
  'PYG',
  'RWF',
  'UGX',
  'VND',
  'VUV',
  'XAF',
  'XOF',
  'XPF',
]);

const THREE_DECIMAL: ReadonlySet<string> = new Set(['BHD', 'JOD', 'KWD', 'OMR', 'TND']);

/**
 * `1999, "usd"` → `19.99 USD`; no amount → empty (a currency alone says nothing); anything
 * else that is not an integer amount and a 3-letter code: as given (a string amount too: some
 * senders send major units as text, "19.99", which no rule here can tell from minor ones).
 */
export function formatMinorUnits(amount: unknown, currency: unknown): string {
  if (amount === undefined || amount === null || amount === '') return '';
  const code = typeof currency === 'string' ? currency.toUpperCase() : '';
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || !/^[A-Z]{3}$/.test(code)) {
    const parts = [amount, currency].filter((p) => typeof p === 'number' || typeof p === 'string');
    return parts.map(String).join(' ');
  }
  const decimals = ZERO_DECIMAL.has(code) ? 0 : THREE_DECIMAL.has(code) ? 3 : 2;
  const digits = Math.abs(amount)
    .toString()
    .padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = decimals > 0 ? `.${digits.slice(digits.length - decimals)}` : '';
  return `${amount < 0 ? '-' : ''}${whole}${fraction} ${code}`;
}
