/**
 * A command line the CLI cannot act on (a flag naming something that is not there, a flag
 * given twice or with its negation):
 * reported as `hookgate: <message>` with exit status 2, like an unknown flag.
 */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
