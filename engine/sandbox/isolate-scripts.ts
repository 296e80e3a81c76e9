/**
 * Scripts the transform process runs inside each isolated-vm context
 * before and around user code: the lockdown of the global, the console
 * that only collects text, and the runner of one call. They hold cheap
 * caps of their own, but user code shares their context and can tamper
 * with what they use: the process and the server check what comes out.
 */
import { CONSOLE_LINE_CHARS, CONSOLE_LINES_PER_CALL, MESSAGE_CHARS } from './protocol.ts';

// Longest string the console cuts for a line; a longer one is named by its length (copying a few
// megabytes to cut them is cheap; hundreds are not).
const READ_CHARS = 4 * 1024 * 1024;

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
    // A long string may be joined pieces: cutting it would first copy all of it, outside the
    // isolate's memory limit and timeout (512M characters: 0.5 GB and a missed deadline).
    if (typeof value === 'string') return value.length > ${READ_CHARS} ? '[' + value.length + ' characters]' : value;
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
/** What \`start\` or \`settle\` returns for an output longer than the cap. */
export const OUTPUT_TOO_LARGE = 2;
/** What \`start\` or \`settle\` returns when the transform threw; \`reason\` then gives the text. */
export const THREW = 3;

/**
 * The runner of one call, as three functions: \`start\` parses the input and calls the transform;
 * a plain result comes back serialised at once (one synchronous call into the isolate, no
 * thread hop); a thenable is awaited at once, its serialised value kept (in this closure, out
 * of the transform's reach) and \`PENDING\` returned, and \`settle\` then hands that promise over.
 * \`reason\` gives the text of the last failure.
 *
 * Nothing the transform throws leaves the isolate: copying a thrown value out would run its
 * getters, Proxy traps or Error.prepareStackTrace in the process with no CPU timeout (until the
 * server's deadline kills the process), and its message would pick the failure kind. It is
 * caught here, read under the call's timeout, and only a number and a string come out; what
 * the process still sees thrown (a timeout, a disposed isolate) is isolated-vm's own. Only
 * primitives are returned: resolving \`settle\`'s promise with an object would look up a
 * \`then\` the transform may have put on Object.prototype.
 */
export const RUNNERS = `(() => {
  let pending;
  let failure = '';
  // Bound now: user code that replaces String.prototype.slice later cannot lift the cut.
  const cut = Function.prototype.call.bind(String.prototype.slice);
  const threw = (error) => {
    try {
      const text = error instanceof Error ? error.message : error;
      failure = cut(typeof text === 'string' ? text : String(text), 0, ${MESSAGE_CHARS});
    } catch {
      failure = 'the transform threw a value that cannot be read';
    }
    return ${THREW};
  };
  const finish = (result, maxBytes) => {
    if (result === undefined) return undefined;
    const text = JSON.stringify(result);
    if (text === undefined) return undefined;
    if (typeof text !== 'string') throw new TypeError('JSON.stringify returned no text');
    // UTF-16 units, never more than the UTF-8 bytes: a cheap cut before the text is copied
    // out; the process counts the bytes of what passes (transform-process.ts).
    if (text.length > maxBytes) return ${OUTPUT_TOO_LARGE};
    return text;
  };
  // Awaited at once, not when settle runs: a rejection with no handler yet at the end of
  // start would be copied out by isolated-vm as an error, with no timeout.
  const awaited = async (thenable, maxBytes) => {
    try {
      return finish(await thenable, maxBytes);
    } catch (error) {
      return threw(error);
    }
  };
  const start = (fn, input, maxBytes) => {
    pending = undefined;
    try {
      const result = fn(typeof input === 'string' ? JSON.parse(input) : input);
      if (result !== null && (typeof result === 'object' || typeof result === 'function')) {
        if (typeof result.then === 'function') {
          pending = awaited(result, maxBytes);
          return ${PENDING};
        }
      }
      return finish(result, maxBytes);
    } catch (error) {
      return threw(error);
    }
  };
  const settle = () => {
    const promise = pending;
    pending = undefined;
    return promise;
  };
  const reason = () => {
    const text = failure;
    failure = '';
    return text;
  };
  return [start, settle, reason];
})()`;
