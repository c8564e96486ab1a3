// A DKIM key of a signing domain for tests that sign through the SMTP provider: the private key
// the provider signs with, the TXT record a DNS zone would publish, and mailauth's verification of
// a received message against that record alone (no DNS server; `dns-server.ts` is for tests that
// need one).
import { generateKeyPairSync } from 'node:crypto';
import { dkimVerify } from 'mailauth';

export function dkimTestKey(domain: string, selector = 'tern1') {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const txt = `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;
  const record = `${selector}._domainkey.${domain}`;
  return {
    privateKey,
    txt,
    /** mailauth's DKIM results of `raw`, resolving this key's record (any other name: ENOTFOUND). */
    verify: (raw: string | Buffer) =>
      dkimVerify(Buffer.from(raw), {
        resolver: (async (name: string) => {
          if (name === record) return [[txt]];
          throw Object.assign(new Error(name), { code: 'ENOTFOUND' });
        }) as never,
      }),
  };
}
