/**
 * The Gmail API client of the configured mailbox, as the service and the
 * gmail commands both build it: the OAuth token source over the config's
 * refresh token (else the one setup stored in the data directory), and a
 * hash of that refresh token (a new one lifts a refused one's stop).
 */
import { createHash } from 'node:crypto';
import { ConfigError, type LoadedConfig } from '../config.ts';
import { createGmailApi, type GmailApi } from './api.ts';
import { createTokenSource } from './oauth.ts';
import { isSecureUrl } from '../outbound/secure-url.ts';
import { readRefreshToken } from './token-file.ts';

export type MailboxClient = { api: GmailApi; tokenHash: () => string | undefined };

type GmailSettings = LoadedConfig['config']['hooks']['gmail'];

/** Throws ConfigError when an address the client sends secrets to is plain http off loopback. */
export function checkSecretUrls(gmail: Pick<GmailSettings, 'oauth' | 'apiBaseUrl'>): void {
  // The refresh token and client secret go to tokenUrl, the access token to apiBaseUrl.
  const urls = [
    ['hooks.gmail.oauth.tokenUrl', gmail.oauth.tokenUrl],
    ['hooks.gmail.apiBaseUrl', gmail.apiBaseUrl],
  ] as const;
  for (const [path, url] of urls) {
    if (!isSecureUrl(url)) {
      throw new ConfigError(path, 'an https URL (plain http on loopback only): it is sent secrets');
    }
  }
}

/** The client of `account`; `clientId` empty makes every refresh fail as misconfigured. */
export function createMailboxClient(
  loaded: LoadedConfig,
  account: string,
  timeoutMs: number,
): MailboxClient {
  // Checked here too: the gmail commands build a client without the server's compile step.
  checkSecretUrls(loaded.config.hooks.gmail);
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
