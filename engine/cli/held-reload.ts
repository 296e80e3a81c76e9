/**
 * SIGHUP (reload) asked for while `serve` is still starting. Until serve installs its reload
 * handler, SIGHUP's default action would kill the starting server (the bin forwards SIGHUP to
 * the Node 24 it started, so that too). From the moment the command is known to be `serve`, a
 * SIGHUP is held instead, and serve reloads once it listens. No imports: installed early.
 */
let held = false;
let holding = false;
const hold = () => {
  held = true;
};

/** Hold SIGHUP until `takeHeldReload`. */
export function holdReloads(): void {
  if (holding) return;
  holding = true;
  process.on('SIGHUP', hold);
}

/** Stop holding (the caller's own SIGHUP handler is already in place); whether one came. */
export function takeHeldReload(): boolean {
  process.off('SIGHUP', hold);
  holding = false;
  const came = held;
  held = false;
  return came;
}
