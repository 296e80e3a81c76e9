/**
 * The service log: JSON lines through pino. Tokens and payloads are never
 * passed to it; the redaction list is a second line of defence.
 */
import { type Logger, pino } from 'pino';

export type { Logger };

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
        censor: '[redacted]',
      },
    },
    pino.destination({ dest: fd, sync: false }),
  );
}
