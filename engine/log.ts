/**
 * The service log: JSON lines through pino. Tokens and payloads are never
 * passed to it; the redaction list is a second line of defence.
 */
import { type Logger, pino } from 'pino';
import { headUnits } from './text-cut.ts';

export type { Logger };

const CENSOR = '[redacted]';

/**
 * Characters kept of each text field of a request line (hook name, client, delivery id...): as
 * the console's journal keeps of a name. Such fields come from the caller, and a request line is
 * written for every request, refusals too: unbounded, 2,000 pipelined requests for a 15,000
 * character hook name wrote 30 MB of log.
 */
export const MAX_LOGGED_CHARS = 256;
const CUT_MARK = '…';

/**
 * The logger of the one line per request. That line carries only fields the request path sets
 * (ids, status, codes, timings), so redacting its top-level names is the second line of defence
 * there; the service logger's wildcard paths cost 3-5 µs per line, a few percent of a request.
 * Every text field of the line, and each text in a list, is cut to MAX_LOGGED_CHARS here, in one
 * place, whichever stage set it.
 */
export function requestLineLogger(logger: Logger): Logger {
  return logger.child(
    {},
    {
      redact: { paths: ['token', 'authorization'], censor: CENSOR },
      formatters: { log: boundTexts },
    },
  );
}

/** The fields with every text (and every text in a list) at most MAX_LOGGED_CHARS long. */
export function boundTexts(line: object): object {
  const fields = line as Record<string, unknown>;
  let out: Record<string, unknown> | undefined;
  for (const key in fields) {
    const value = fields[key];
    const bounded = Array.isArray(value) ? boundList(value) : boundText(value);
    if (bounded !== value) {
      out ??= { ...fields };
      out[key] = bounded;
    }
  }
  return out ?? fields;
}

function boundList(values: unknown[]): unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < values.length; i++) {
    const bounded = boundText(values[i]);
    if (bounded !== values[i]) {
      out ??= values.slice();
      out[i] = bounded;
    }
  }
  return out ?? values;
}

function boundText(value: unknown): unknown {
  return typeof value === 'string' && value.length > MAX_LOGGED_CHARS
    ? headUnits(value, MAX_LOGGED_CHARS) + CUT_MARK
    : value;
}

/** Create the service logger writing JSON lines to a file descriptor (stdout by default). */
export function createLogger(level: string, fd = 1): Logger {
  return pino(
    {
      level,
      base: { service: 'hookgate' },
      redact: {
        paths: [
          'token',
          '*.token',
          'authorization',
          '*.authorization',
          'headers.authorization',
          'headers["x-hookgate-token"]',
        ],
        censor: CENSOR,
      },
    },
    destination(fd),
  );
}

function destination(fd: number) {
  const stream = pino.destination({ dest: fd, sync: false });
  // A reader that went away (EPIPE) must not stall shutdown or crash the service: stop logging.
  stream.on('error', () => stream.destroy());
  return stream;
}
