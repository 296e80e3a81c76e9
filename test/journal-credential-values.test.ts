/**
 * A credential in a header of an ordinary name is not remembered by the console's journal, in
 * any of the header's copies (Node joins them with ", ") and in the schemes of OAuth 1.0, AWS
 * SigV4 and others: only a value starting with one of a few schemes was dropped.
 */
import { describe, expect, it } from 'vitest';
import { keptHeaders } from '../engine/admin/journal-record.ts';

describe('a credential under an ordinary header name', () => {
  it('the second occurrence of a repeated header (joined by Node with ", ") is not remembered', () => {
    const kept = keptHeaders(
      {
        'x-upstream': 'hop-1, Bearer the-upstream-token-0123456789',
        'x-copy': ['a', 'Basic dXNlcjpwYXNz'],
      },
      new Set(),
    );
    expect(JSON.stringify(kept)).not.toContain('the-upstream-token-0123456789');
    expect(JSON.stringify(kept)).not.toContain('dXNlcjpwYXNz');
  });

  it('OAuth 1.0 and AWS SigV4 credentials are not remembered either', () => {
    const kept = keptHeaders(
      {
        'x-upstream-1': 'OAuth oauth_consumer_key="ck", oauth_signature="c2lnbmF0dXJl"',
        'x-original-credentials':
          'AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20261130/us-east-1/s3/aws4_request, Signature=abcdef0123',
      },
      new Set(),
    );
    expect(kept).toEqual({});
  });
});
