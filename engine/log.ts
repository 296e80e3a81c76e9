/**
 * The service log: JSON lines through pino. Tokens and payloads are never
 * passed to it; the redaction list is a second line of defence.
 */
import { type Logger, pino } from 'pino';

export type { Logger };

const CENSOR = '[redacted]';

/**
 * The logger of the one line per request. That line carries only fields the request path sets
 * (ids, status, codes, timings), so redacting its top-level names is the second line of defence
 * there; the service logger's wildcard paths cost 3-5 µs per line, a few percent of a request.
 */
export function requestLineLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: ['token', 'authorization'], censor: CENSOR } });
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
