/**
 * `hookgate test <name> --payload FILE`: run one request through the whole
 * pipeline without storing or dispatching, and show which mapping matched
 * (and why the others did not), the resulting actions and policy decisions.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../config.ts';
import type { Verification } from '../envelope.ts';
import { type DryRunResult, dryRun, senderHeaders } from '../ingress/dry-run.ts';
import { createLogger } from '../log.ts';
import { startTransforms } from '../sandbox/start.ts';
import type { MatchOutcome } from '../rules.ts';
import { wrappedContent } from '../safety.ts';
import { compileSetup } from './check.ts';
import { jsonLine, terminalText } from './terminal-text.ts';

export type TestFlags = {
  name: string;
  payload: string;
  headers: string[];
  query: string[];
  json?: boolean;
  config?: string;
  /** Sign the request with the route's first secret, as its sender would. */
  sign?: boolean;
};

const WHY: Record<MatchOutcome, string> = {
  matched: 'matched',
  path: 'no: path differs',
  source: 'no: payload.source differs',
  when: 'no: when condition is false',
  skipped: 'not tried (an earlier mapping matched)',
};

/**
 * Run `test`; exit 0 when the request would be accepted (200/204), 1 when refused, 2 when the
 * payload file cannot be read (as for a config error: nothing was tried).
 */
export async function testRequest(flags: TestFlags, out: (line: string) => void): Promise<number> {
  const setup = compileSetup(flags.config, process.env, process.cwd());
  if (!setup)
    throw new ConfigError(
      '',
      'no config file found (--config, HOOKGATE_CONFIG or ./hookgate.yaml)',
    );
  let body: Buffer;
  try {
    body = readFileSync(flags.payload);
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    process.stderr.write(
      `${terminalText(`hookgate test: cannot read --payload ${flags.payload} (${why})`)}\n`,
    );
    return 2;
  }
  const transforms = await startTransforms(
    setup.loaded.config,
    setup.mappings,
    createLogger('warn', 2),
  );
  const headers = parsePairs(flags.headers, ':', (k) => k.toLowerCase());
  if (flags.sign)
    Object.assign(
      headers,
      signed(
        flags.name,
        senderHeaders(setup.loaded.config, setup.mappings, flags.name, body, headers),
      ),
    );
  const request = {
    hook: flags.name,
    body,
    headers,
    query: new URLSearchParams(Object.entries(parsePairs(flags.query, '=', (k) => k))).toString(),
  };
  let result: DryRunResult;
  try {
    const routes = setup.routes({ ...(transforms && { transforms }) });
    result = await dryRun(setup.loaded.config, routes, request);
  } finally {
    await transforms?.close();
  }
  // The payload may be a real delivery pasted from a sender: print it terminal-safe.
  if (flags.json) out(jsonLine(result));
  else {
    for (const line of describe(flags.name, setup.loaded.config.hooks.path, result))
      out(terminalText(line));
  }
  return result.status < 300 ? 0 : 1;
}

function describe(name: string, base: string, result: DryRunResult): string[] {
  const lines = [`POST ${base}/${name}`];
  if (result.verification)
    lines.push(`Authenticated: ${describeVerification(result.verification)}`);
  if (result.replayKey) lines.push(`Replay key: ${result.replayKey} (not looked up)`);
  if (result.trace.length > 0) {
    lines.push('Mappings, in order:');
    for (const { mappingId, outcome } of result.trace)
      lines.push(`  ${mappingId}: ${WHY[outcome as MatchOutcome]}`);
  }
  if (result.error) {
    lines.push(`Refused: ${result.status} ${result.error.code}: ${result.error.message}`);
    if (result.error.code === 'unauthorized') {
      lines.push(
        result.signed
          ? "Hint: on a signed route, pass the delivery's own signature headers (--header) or --sign."
          : 'Hint: this route takes hooks.token, which is sent unless the request brings its own Authorization or X-Hookgate-Token header.',
      );
    }
    return lines;
  }
  if (result.status === 204) {
    lines.push('Result: 204 (no mapping matched; nothing would be stored)');
    return lines;
  }
  lines.push(`Result: 200 ${JSON.stringify(result.response)}`);
  for (const [i, action] of result.actions.entries()) {
    lines.push(`Action ${i + 1} (${action.kind}):`);
    // One output line per JSON line: a line break inside a value is already escaped by JSON.
    lines.push(...JSON.stringify(action, null, 2).split('\n'));
    lines.push('Policy decisions:');
    if (action.kind === 'agent') {
      lines.push(`  agent: ${action.agentId}`);
      lines.push(`  session key: ${action.sessionKey} (${action.sessionKeySource})`);
      lines.push(`  model: ${action.model ?? '(agent default)'}`);
      lines.push(
        `  delivery: ${action.deliver ? `${action.channel}${action.to ? ` to ${action.to}` : ''}` : 'off'}`,
      );
    }
    const safety = action.safety;
    lines.push(
      safety
        ? `  safety: wrapped as ${safety.label}; injection patterns: ${safety.patterns.join(', ') || 'none'}`
        : '  safety: NOT wrapped (allowUnsafeExternalContent)',
    );
    const text = action.kind === 'agent' ? action.message : action.text;
    lines.push(
      '  content:',
      ...wrappedContent(text)
        .split('\n')
        .map((l) => `    ${l}`),
    );
  }
  return lines;
}

function describeVerification(v: Verification): string {
  const parts: string[] = [v.scheme];
  if (v.secretIndex !== undefined) parts.push(`secret #${v.secretIndex}`);
  if (v.skewSeconds !== undefined) parts.push(`timestamp skew ${v.skewSeconds}s`);
  if (v.deliveryId !== undefined) parts.push(`delivery ${v.deliveryId}`);
  return parts.join(', ');
}

function parsePairs(
  items: string[],
  separator: string,
  key: (k: string) => string,
): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const item of items) {
    const at = item.indexOf(separator);
    if (at <= 0) throw new ConfigError('', `"${item}" is not of the form KEY${separator}VALUE`);
    out[key(item.slice(0, at).trim())] = item.slice(at + 1).trim();
  }
  return out;
}

/** What --sign adds, or the ConfigError saying why the route cannot be signed. */
function signed(name: string, headers: Record<string, string> | string): Record<string, string> {
  if (typeof headers === 'string') throw new ConfigError('', `--sign: ${headers}`);
  // A token route has nothing to sign: asking to sign it is a mistake worth saying.
  if (Object.keys(headers).length === 0)
    throw new ConfigError('', `--sign: the route "${name}" has no auth block to sign for`);
  return headers;
}
