/**
 * The request path as one ordered list of stages over the routes compiled at
 * boot: admit -> pick route -> (subscription handshake) -> authenticate
 * headers -> read body -> authenticate body -> parse -> (provider handshake)
 * -> normalise -> replay check -> accept -> commit. The server and the dry
 * run (`hookgate test`) build the same list; only the ledger differs.
 */
import type { PresentedToken } from '../auth.ts';
import type { ClientAddressResolver } from '../client-address.ts';
import type { Ledger } from '../dispatcher.ts';
import type { AuthFailureLimiter } from '../rate-limit.ts';
import { createAdmit, methodNotAllowed } from './admit.ts';
import { createAuthenticateBody, createAuthenticateHeaders } from './authenticate.ts';
import { accept, createCommit } from './commit.ts';
import { type Exchange, had, type Stage } from './exchange.ts';
import { createSubscribe, slackHandshake } from './handshakes.ts';
import { normalise } from './normalise.ts';
import { type BodySettings, createParse, createReadBody } from './read-body.ts';
import { createReplayCheck } from './replay.ts';
import type { RouteTable } from './routes.ts';

export type StageSettings = {
  enabled: boolean;
  hooksPath: string;
  routes: RouteTable;
  limiter: AuthFailureLimiter;
  resolveClient: ClientAddressResolver;
  tokenMatches: (presented: PresentedToken) => boolean;
  body: BodySettings;
  ledger: Ledger;
};

/** The stages of one request, in order. */
export function createStages(settings: StageSettings): readonly Stage[] {
  const { routes, limiter } = settings;
  function pickRoute(x: Exchange) {
    x.route = routes.find(x.hook);
    if (x.source.method !== 'POST' && !had(x.route, 'route').gate.verifyToken) {
      throw methodNotAllowed();
    }
    return undefined;
  }
  return Object.freeze([
    createAdmit(settings),
    pickRoute,
    createSubscribe(limiter),
    createAuthenticateHeaders(settings),
    createReadBody(settings.body),
    createAuthenticateBody(settings),
    createParse(settings.body),
    slackHandshake,
    normalise,
    createReplayCheck(settings.ledger),
    accept,
    createCommit(settings.ledger),
  ]);
}
