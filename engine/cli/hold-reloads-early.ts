/**
 * Imported first by the entry point, for its side effect: when the command is `serve` (or none),
 * SIGHUP is held from before the rest of the modules load (the config module alone takes about
 * a third of a second), not only from when the arguments are parsed (held-reload.ts); and a
 * launcher that started this process is told it may pass SIGHUP on.
 */
import { holdReloads } from './held-reload.ts';

const command = process.argv[2];
if (command === undefined || command === 'serve' || command.startsWith('-')) holdReloads();

// Started by the bin's launcher (bin/hookgate.js on an older system Node), which keeps a SIGHUP
// until this process says it has its own handling in place: during Node's boot, before this
// module ran, a SIGHUP passed on would have ended it. The channel then goes, so that it keeps
// no finished command alive. Only the launcher's channel (it sets HOOKGATE_LAUNCHER): another
// parent's, a process manager's, is left alone. Not passed on to runners and transforms.
if (process.env['HOOKGATE_LAUNCHER'] === '1') {
  delete process.env['HOOKGATE_LAUNCHER'];
  if (process.send) process.send('hookgate:booted', () => process.disconnect());
}
