// The signed download links of /compat/resend's received mail (SPEC §24): a token names one message
// and part until it expires, and nothing else.
import { describe, expect, it } from 'vitest';
import { downloadToken, readDownloadToken } from './resend-downloads.js';

const SECRET = 'download-test-secret';
const NOW = 1_800_000_000;

describe('download tokens', () => {
  it('a genuine token names its message and part until it expires, not after', () => {
    const token = downloadToken(SECRET, 'inb_x', 'att_1', NOW + 60);
    expect(readDownloadToken(SECRET, token, NOW)).toEqual({ id: 'inb_x', part: 'att_1' });
    expect(readDownloadToken(SECRET, token, NOW + 60)).toEqual({ id: 'inb_x', part: 'att_1' });
    expect(readDownloadToken(SECRET, token, NOW + 61)).toBeNull();
  });

  it('another secret, an altered payload or signature, or no signature: refused', () => {
    const token = downloadToken(SECRET, 'inb_x', 'raw', NOW + 60);
    const [payload, sig] = token.split('.') as [string, string];
    const other = Buffer.from(JSON.stringify(['inb_y', 'raw', NOW + 60])).toString('base64url');
    for (const forged of [
      downloadToken('another-secret', 'inb_x', 'raw', NOW + 60),
      `${other}.${sig}`,
      `${payload}.${sig.slice(1)}`,
      `${payload}.`,
      payload,
      `${token}.x`,
      'not a token',
    ])
      expect(readDownloadToken(SECRET, forged, NOW), forged).toBeNull();
  });
});
