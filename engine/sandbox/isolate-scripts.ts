/**
 * Scripts the transform process runs inside each isolated-vm context
 * before and around user code: the lockdown of the global, the console
 * that only collects text, and the runner of one call. They hold cheap
 * caps of their own, but user code shares their context and can tamper
 * with what they use: the process and the server check what comes out.
 */
import { CONSOLE_LINE_CHARS, CONSOLE_LINES_PER_CALL } from './protocol.ts';

/**
 * Removes what escapes the isolate's memory limit: WebAssembly memories,
 * SharedArrayBuffer and Atomics (unless allowed), and growing an ArrayBuffer
 * in place (a resizable buffer grows outside the limit; fixed ones do not).
 * Runs first in each context: a context has its own builtins, so nothing in
 * it can reach another realm's copies.
 */
export function lockdownScript(allowWebAssembly: boolean): string {
  const wasm = allowWebAssembly
    ? ''
    : 'delete globalThis.WebAssembly; delete globalThis.SharedArrayBuffer; delete globalThis.Atomics;';
  return `(() => {
    ${wasm}
    delete ArrayBuffer.prototype.resize;
    delete ArrayBuffer.prototype.transfer;
  })()`;
}

/** A console that only collects text; evaluates to the drain the process calls after each call. */
export const CONSOLE_BOOTSTRAP = `(() => {
  const lines = [];
  let dropped = 0;
  // Bound now: user code that replaces String.prototype methods later cannot lift the cut.
  const cut = Function.prototype.call.bind(String.prototype.slice);
  const show = (value) => {
    if (typeof value === 'string') return value;
    try { return JSON.stringify(value) ?? String(value); } catch { return String(value); }
  };
  const collect = (level) => (...args) => {
    if (lines.length >= ${CONSOLE_LINES_PER_CALL}) { dropped++; return; }
    let text = '';
    for (let i = 0; i < args.length && text.length < ${CONSOLE_LINE_CHARS}; i++) {
      text += (i ? ' ' : '') + show(args[i]);
    }
    lines[lines.length] = { level, text: text.length > ${CONSOLE_LINE_CHARS} ? cut(text, 0, ${CONSOLE_LINE_CHARS}) : text };
  };
  globalThis.console = Object.freeze({
    log: collect('info'), info: collect('info'), debug: collect('debug'),
    warn: collect('warn'), error: collect('error'),
  });
  return () => {
    const out = JSON.stringify({ lines, dropped });
    lines.length = 0;
    dropped = 0;
    return out;
  };
})()`;

/** What \`start\` returns for a result that must be awaited (never a string, so never output). */
export const PENDING = 1;

/**
 * The runner of one call, as two functions: \`start\` parses the input and calls the transform;
 * a plain result comes back serialised at once (one synchronous call into the isolate, no
 * thread hop), a thenable is kept (in this closure, out of the transform's reach) and
 * \`PENDING\` returned, and \`settle\` then awaits it and serialises its value.
 */
export const RUNNERS = `(() => {
  let pending;
  const finish = (result, maxBytes) => {
    if (result === undefined) return undefined;
    const text = JSON.stringify(result);
    if (text === undefined) return undefined;
    if (typeof text !== 'string') throw new Error('hookgate:output-not-json');
    if (text.length > maxBytes) throw new Error('hookgate:output-too-large');
    return text;
  };
  const start = (fn, input, maxBytes) => {
    pending = undefined;
    const result = fn(JSON.parse(input));
    if (result !== null && (typeof result === 'object' || typeof result === 'function')) {
      if (typeof result.then === 'function') {
        pending = [result, maxBytes];
        return ${PENDING};
      }
    }
    return finish(result, maxBytes);
  };
  const settle = async () => {
    const [promise, maxBytes] = pending;
    pending = undefined;
    return finish(await promise, maxBytes);
  };
  return [start, settle];
})()`;
