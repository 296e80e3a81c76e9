/**
 * The one parse of a command's flags that every `hookgate` command goes through: node's
 * parseArgs, which keeps the last of a value flag given twice (`serve --port 1 --port 2` served on 2)
 * and the last of a flag and its negation (`--include-body --no-include-body` left the body
 * out), silently. Here either is a usage error (exit status 2) naming the flags, never their
 * values: a value may be a secret. A flag declared `multiple` (`test --header`) still repeats.
 * A value flag given empty or blank (`--config "$UNSET"`) is a usage error too, rather than
 * read as not given.
 * No command sets parseArgs' allowNegative: under it `--x --no-x` would read as a switch given
 * twice, which is taken.
 */
import { type ParseArgsConfig, type ParseArgsOptionsConfig, parseArgs } from 'node:util';
import { UsageError } from './usage-error.ts';

type OptionToken = { kind: string; name?: string; value?: string | undefined };

/** parseArgs(config) for `command`, refusing a flag given twice and a flag with its --no- form. */
export function parseFlags<T extends ParseArgsConfig>(
  command: string,
  config: T,
): ReturnType<typeof parseArgs<T>> {
  const parsed = parseArgs({ ...config, tokens: true } as ParseArgsConfig);
  refuseRepeats(command, config.options ?? {}, parsed.tokens ?? []);
  // The same parse the caller asked for, with the tokens besides (unused unless it asked).
  return parsed as ReturnType<typeof parseArgs<T>>;
}

function refuseRepeats(
  command: string,
  options: ParseArgsOptionsConfig,
  tokens: readonly OptionToken[],
): void {
  const given = new Set<string>();
  for (const { kind, name, value } of tokens) {
    if (kind !== 'option' || name === undefined) continue;
    // `--config "$UNSET"` read as no flag: the quickstart, or ./data, instead of what was meant.
    if (value !== undefined && value.trim() === '')
      throw new UsageError(`${command}: --${name} is empty (give it a value, or leave it out)`);
    // A switch given twice says the same thing twice: only a value given twice is ambiguous.
    const repeatable = options[name]?.multiple === true || options[name]?.type === 'boolean';
    if (given.has(name) && !repeatable)
      throw new UsageError(`${command}: --${name} is given more than once (give it once)`);
    const opposite = negationOf(name, options);
    if (opposite !== undefined && given.has(opposite))
      throw new UsageError(
        `${command}: --${opposite} and --${name} contradict each other (give one of them)`,
      );
    given.add(name);
  }
}

/** The boolean flag that says the opposite of boolean `name` (`x` for `no-x`, and back), if any. */
function negationOf(name: string, options: ParseArgsOptionsConfig): string | undefined {
  const opposite = name.startsWith('no-') ? name.slice(3) : `no-${name}`;
  // Own properties only: a name is never looked up on Object.prototype.
  const isBoolean = (flag: string) =>
    Object.hasOwn(options, flag) && options[flag]?.type === 'boolean';
  return isBoolean(name) && isBoolean(opposite) ? opposite : undefined;
}
