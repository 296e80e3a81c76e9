/**
 * After a reply went out, agent run's or heartbeat's: the main session's last
 * route moved where the policy lets that delivery move it, and the runtime
 * told (its cached channel follows).
 */
import { type DeliveredRoute, type LastRoutePolicy, lastRouteAfter } from './last-route.ts';
import type { RuntimeStore } from './runtime-store.ts';

export type RouteMoveDeps = {
  store: Pick<RuntimeStore, 'lastRoute' | 'setRoute'>;
  settings: { mainKey: string; lastRoute: LastRoutePolicy };
  /** Told when a delivery moved the main session's last route. */
  routeMoved?: (channel: string) => void;
};

/** Move the last route after a successful delivery, when the policy says so. */
export async function moveLastRoute(deps: RouteMoveDeps, delivery: DeliveredRoute): Promise<void> {
  const { store, settings } = deps;
  const moved = lastRouteAfter(
    settings.lastRoute,
    delivery,
    await store.lastRoute(settings.mainKey),
  );
  if (!moved) return;
  await store.setRoute(settings.mainKey, moved.channel, moved.recipient);
  deps.routeMoved?.(moved.channel);
}
