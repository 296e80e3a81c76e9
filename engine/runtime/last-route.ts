/**
 * Who may move the main session's `last` route: its owner only. The route
 * decides where heartbeat replies (which summarise every system event) go,
 * so a delivery whose channel and recipient came from a request (a hook's
 * agent run) never moves it elsewhere. It moves only to a route the
 * deployment declares as the owner's (`session.ownerRoutes`), or follows the
 * current route when the product itself moved that chat; with
 * `session.pinLastRoute` nothing moves it.
 */
import type { ChannelAdapter } from '../delivery/adapter.ts';

/** A channel and a (normalised) recipient on it. */
export type RouteKey = { channel: string; recipient: string };

/** The deployment's rules for the last route, compiled once at start. */
export type LastRoutePolicy = {
  pinned: boolean;
  /** session.ownerRoutes, each recipient normalised as its channel's adapter does. */
  ownerRoutes: readonly RouteKey[];
};

/** A successful delivery: where it was sent, and where it landed (a moved chat differs). */
export type DeliveredRoute = {
  source: 'hook' | 'heartbeat';
  attempted: RouteKey;
  delivered: RouteKey;
};

const same = (a: RouteKey | undefined, b: RouteKey): boolean =>
  a !== undefined && a.channel === b.channel && a.recipient === b.recipient;

/** The last route to record after a successful delivery, or undefined to leave it as it is. Pure. */
export function lastRouteAfter(
  policy: LastRoutePolicy,
  delivery: DeliveredRoute,
  last: RouteKey | undefined,
): RouteKey | undefined {
  if (policy.pinned || same(last, delivery.delivered)) return undefined;
  // The owner's own reply on the current route, moved by the product (a chat migration):
  // follow the chat. A hook's delivery never moves it, even there: the next heartbeat reply
  // meets the same migration answer and moves it then.
  if (delivery.source === 'heartbeat' && same(last, delivery.attempted)) return delivery.delivered;
  // A hook reply that went to exactly a declared owner route: the owner is reached there.
  // Every other destination came from a request and must not receive later heartbeat replies.
  if (delivery.source === 'hook' && policy.ownerRoutes.some((r) => same(r, delivery.delivered)))
    return delivery.delivered;
  return undefined;
}

/** A declared route (`{channel, to}`) as deliveries record it; undefined when it could never be delivered to. */
export function normaliseRoute(
  route: { channel: string; to: string },
  adapters: ReadonlyMap<string, ChannelAdapter>,
): RouteKey | undefined {
  const adapter = adapters.get(route.channel);
  if (!adapter || adapter.checkRecipient(route.to) !== null) return undefined;
  return { channel: route.channel, recipient: adapter.normaliseRecipient?.(route.to) ?? route.to };
}

/** Compile the session settings into a last-route policy. */
export function compileLastRoutePolicy(
  session: {
    pinLastRoute: boolean;
    ownerRoutes: ReadonlyArray<{ channel: string; to: string }>;
  },
  adapters: ReadonlyMap<string, ChannelAdapter>,
): LastRoutePolicy {
  // A route that could never be delivered to can never match a delivery.
  const ownerRoutes = session.ownerRoutes.flatMap((route) => normaliseRoute(route, adapters) ?? []);
  return { pinned: session.pinLastRoute, ownerRoutes };
}
