import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/services.js';
import { buildTern, runTernToExit, startTern } from './tern-process.js';

/** Socket inodes held open by a process (/proc/<pid>/fd → socket:[inode]). */
function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // fd closed meanwhile
    }
  }
  return inodes;
}

/** TCP ports in LISTEN state (0A) whose socket belongs to `inodes`, IPv4 and IPv6. */
function listeningTcpPorts(inodes: Set<string>): number[] {
  const ports: number[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const [, local, , state] = cols;
      if (state === '0A' && inodes.has(cols[9]!)) ports.push(Number.parseInt(local!.split(':')[1]!, 16));
    }
  }
  return ports;
}

/** Unix sockets accepting connections (flag __SO_ACCEPTCON) that belong to `inodes`. */
function listeningUnixSockets(inodes: Set<string>): string[] {
  const found: string[] = [];
  for (const line of readFileSync('/proc/net/unix', 'utf8').split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 7) continue;
    const flags = Number.parseInt(cols[3]!, 16);
    if ((flags & 0x10000) !== 0 && inodes.has(cols[6]!)) found.push(cols[7] ?? '(anonymous)');
  }
  return found;
}

describe('npm start opens nothing but PORT (issue 9, item 2: the embedded Postgres has no listener)', () => {
  beforeAll(() => buildTern(), 120_000);

  it('listens on PORT only: no TCP port and no Unix socket for PGlite', async () => {
    const tern = await startTern({ env: { DATA_DIR: tempDir('tern-e2e-listen-'), NODE_ENV: 'development' } });
    try {
      const pid = tern.child.pid!;
      const port = Number(new URL(tern.url).port);
      // A query went through PGlite (the log answered), so the store is fully open.
      const ready = await fetch(`${tern.url}/ready`);
      expect(ready.status).toBe(200);
      const inodes = socketInodes(pid);
      expect([...new Set(listeningTcpPorts(inodes))]).toEqual([port]);
      expect(listeningUnixSockets(inodes)).toEqual([]);
    } finally {
      await tern.stop();
    }
  });

  it('refuses to start in production with short secrets (issue 9, item 6)', async () => {
    const { code, stderr } = await runTernToExit({
      DATA_DIR: tempDir('tern-e2e-short-'),
      NODE_ENV: 'production',
      JWT_SECRET: 'a',
      INGEST_TOKEN: 'b',
      TRACKING_SECRET: 'listeners-e2e-tracking-secret-0123456789',
      WEBHOOK_SECRETS_KEY: 'listeners-e2e-webhook-secrets-key-0123456789',
      ENCRYPTION_KEY: 'listeners-e2e-encryption-key-0123456789abcdef',
    });
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(
      'Invalid configuration: JWT_SECRET and INGEST_TOKEN must be at least 32 bytes in production (value hidden); e.g. `openssl rand -base64 32`',
    );
  });
});
