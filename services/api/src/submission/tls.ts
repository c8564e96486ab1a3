import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TlsPair {
  key: string;
  cert: string;
}

/** A fresh self-signed pair for `host` (RSA-2048, SHA-256, one year), names localhost and loopback. */
export async function selfSignedPair(host: string): Promise<TlsPair> {
  const altNames: { type: 2 | 7; value?: string; ip?: string }[] = [
    { type: 2, value: 'localhost' },
    { type: 7, ip: '127.0.0.1' },
    { type: 7, ip: '::1' },
  ];
  if (/^[\d.]+$/.test(host) || host.includes(':')) {
    if (host !== '127.0.0.1' && host !== '::1') altNames.push({ type: 7, ip: host });
  } else if (host !== 'localhost') altNames.push({ type: 2, value: host });
  // Loaded when a pair is made (once per data directory): selfsigned and its x509 parsers were
  // ≈ 11 % of the CPU of a start of `npm start` (issue 45, item 6).
  const { generate } = await import('selfsigned');
  const pems = await generate([{ name: 'commonName', value: host }], {
    keySize: 2048,
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 365 * 86_400_000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames },
    ],
  });
  return { key: pems.private, cert: pems.cert };
}

/**
 * Development's STARTTLS pair (SPEC §22): generated once and kept under `DATA_DIR/smtp-tls/`, so a
 * client that pinned it keeps working across restarts. Never used in production.
 */
export async function devTlsPair(dataDir: string, host: string): Promise<TlsPair> {
  const dir = join(dataDir, 'smtp-tls');
  const keyPath = join(dir, 'key.pem');
  const certPath = join(dir, 'cert.pem');
  if (existsSync(keyPath) && existsSync(certPath)) {
    return { key: readFileSync(keyPath, 'utf8'), cert: readFileSync(certPath, 'utf8') };
  }
  const pair = await selfSignedPair(host);
  mkdirSync(dir, { recursive: true });
  writeFileSync(keyPath, pair.key, { mode: 0o600 });
  writeFileSync(certPath, pair.cert);
  return pair;
}
