/**
 * Imported first by the entry point, for its side effect: when the command is `serve` (or none),
 * SIGHUP is held from before the rest of the modules load (the config module alone takes about
 * a third of a second), not only from when the arguments are parsed (held-reload.ts).
 */
import { holdReloads } from './held-reload.ts';

const command = process.argv[2];
if (command === undefined || command === 'serve' || command.startsWith('-')) holdReloads();
