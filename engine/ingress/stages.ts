/**
 * The request path as one ordered list of stages over the routes compiled at
 * boot: admit -> pick route -> (subscription handshake) -> authenticate
 * headers -> read body -> authenticate body -> parse -> (provider handshake)
 * -> normalise -> replay check -> accept -> commit. The server and the dry
 * run (`hookgate test`) build the same list; only the ledger differs.
 */
import type { PresentedToken, UrlTokenCheck } from '../auth.ts';
import type { ClientAddressResolver } from '../client-address.ts';
import type { Ledger } from '../dispatcher.ts';
import type { AuthFailureLimiter } from '../rate-limit.ts';
import { createAdmit, methodNotAllowed } from './admit.ts';
import { createAuthenticateBody, createAuthenticateHeaders } from './authenticate.ts';
import { accept, createCommit } from './commit.ts';
import { type Exchange, had, type NamedStage } from './exchange.ts';
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
  urlToken: UrlTokenCheck;
  body: BodySettings;
  ledger: Ledger;
};

/** The stages of one request, in order, each under the name timings and metrics use. */
export function createStages(settings: StageSettings): readonly NamedStage[] {
  const { limiter } = settings;
  // The route is named in admit (with the hook name); here its methods decide.
  function pickRoute(x: Exchange) {
    if (x.source.method !== 'POST' && !had(x.route, 'route').gate.verifyToken) {
      return methodNotAllowed();
    }
    return undefined;
  }
  const stages: NamedStage[] = [
    { name: 'admit', run: createAdmit(settings) },
    { name: 'pickRoute', run: pickRoute },
    { name: 'subscribe', run: createSubscribe(limiter) },
    { name: 'authenticateHeaders', run: createAuthenticateHeaders(settings) },
    { name: 'readBody', run: createReadBody(settings.body) },
    { name: 'authenticateBody', run: createAuthenticateBody(settings) },
    { name: 'parse', run: createParse(settings.body) },
    { name: 'slackHandshake', run: slackHandshake },
    { name: 'normalise', run: normalise },
    { name: 'replayCheck', run: createReplayCheck(settings.ledger, settings.body.maxDepth) },
    { name: 'accept', run: accept },
    { name: 'commit', run: createCommit(settings.ledger) },
  ];
  return Object.freeze(stages.map((stage) => Object.freeze(stage)));
}
