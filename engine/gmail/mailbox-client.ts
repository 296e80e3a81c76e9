/**
 * The Gmail API client of the configured mailbox, as the service and the
 * gmail commands both build it: the OAuth token source over the config's
 * refresh token (else the one setup stored in the data directory), and a
 * hash of that refresh token (a new one lifts a refused one's stop).
 */
import { createHash } from 'node:crypto';
import type { LoadedConfig } from '../config.ts';
import { createGmailApi, type GmailApi } from './api.ts';
import { createTokenSource } from './oauth.ts';
import { readRefreshToken } from './token-file.ts';

export type MailboxClient = { api: GmailApi; tokenHash: () => string | undefined };

/** The client of `account`; `clientId` empty makes every refresh fail as misconfigured. */
export function createMailboxClient(
  loaded: LoadedConfig,
  account: string,
  timeoutMs: number,
): MailboxClient {
  const { oauth, apiBaseUrl } = loaded.config.hooks.gmail;
  const refreshToken = () => oauth.refreshToken ?? readRefreshToken(loaded.dataDir, account);
  const tokens = createTokenSource({
    tokenUrl: oauth.tokenUrl,
    clientId: oauth.clientId ?? '',
    ...(oauth.clientSecret !== undefined && { clientSecret: oauth.clientSecret }),
    refreshToken,
    timeoutMs,
  });
  return {
    api: createGmailApi({ tokens, userId: account, apiBaseUrl, timeoutMs }),
    tokenHash() {
      const token = refreshToken();
      return token === undefined
        ? undefined
        : createHash('sha256').update(token).digest('base64url');
    },
  };
}
