import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { appendFileSync, chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { freePort } from '../e2e/tern-process.js';
import { initPostgres, run, watchdog } from '../faults/servers.js';
import { waitFor } from '../support/services.js';

/**
 * A Postgres 15 primary with a synchronous streaming standby (pg_basebackup -R), each on its own
 * port and data directory under a temp dir, behind HAProxy (infra/haproxy/postgres.cfg: a check
 * that routes to whichever server answers `pg_is_in_recovery() = f`). As root the servers run as
 * the `postgres` OS user. The machine's cluster on 5432 is never touched. A watchdog stops
 * everything if this test process dies before its teardown.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = process.env.CLUSTER_PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface PostgresPair {
  /** The proxy's address: what every Tern process uses as DATABASE_URL. */
  url: string;
  primaryPort: number;
  standbyPort: number;
  primaryPid(): number | undefined;
  /** `synchronous_standby_names = 'standby1'`: a commit returns once the standby has flushed it. */
  synchronous(): Promise<void>;
  /** `pg_ctl promote -w` on the standby. */
  promote(): Promise<void>;
  /** The servers HAProxy routes to now, joined by `+` (`pg1` once the standby is marked down). */
  routedTo(): Promise<string | undefined>;
  destroy(): Promise<void>;
}

export async function startPostgresPair(): Promise<PostgresPair> {
  const [primaryPort, standbyPort, proxyPort, statsPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const dir = mkdtempSync(join(tmpdir(), 'tern-cluster-pg-'));
  const primary = join(dir, 'primary');
  const standby = join(dir, 'standby');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, id('-u'), id('-g'));
  }
  const pgRun = (tool: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', join(BIN, tool), ...args], { timeoutMs: 120_000 })
      : run(join(BIN, tool), args, { timeoutMs: 120_000 });
  const ctl = (data: string, args: string[]) =>
    pgRun('pg_ctl', ['-D', data, '-l', `${data}.log`, '-w', '-t', '90', ...args]);
  const runAs = asRoot ? 'runuser -u postgres -- ' : '';
  let proxy: ChildProcess | undefined;
  const unwatch = watchdog(
    `kill -9 $(cat "$PG_DIR/haproxy.pid" 2>/dev/null) 2>/dev/null; for d in primary standby; do ${runAs}"$PG_BIN/pg_ctl" -D "$PG_DIR/$d" -m immediate -w stop >/dev/null 2>&1; done; rm -rf "$PG_DIR"`,
    { PG_BIN: BIN, PG_DIR: dir },
  );
  const pidOf = (data: string) => {
    try {
      return Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    } catch {
      return undefined;
    }
  };
  let destroyed = false;
  const pair: PostgresPair = {
    url: `postgres://postgres@127.0.0.1:${proxyPort}/postgres`,
    primaryPort,
    standbyPort,
    primaryPid: () => pidOf(primary),
    async synchronous() {
      const client = new pg.Client({
        connectionString: `postgres://postgres@127.0.0.1:${primaryPort}/postgres`,
      });
      await client.connect();
      try {
        await client.query(`ALTER SYSTEM SET synchronous_standby_names = 'standby1'`);
        await client.query('SELECT pg_reload_conf()');
        await waitFor(
          async () =>
            (
              await client.query(
                `SELECT 1 FROM pg_stat_replication WHERE application_name = 'standby1' AND sync_state = 'sync'`,
              )
            ).rowCount === 1,
          { timeoutMs: 60_000, intervalMs: 200, description: 'the standby streaming synchronously' },
        );
      } finally {
        await client.end();
      }
    },
    async promote() {
      await ctl(standby, ['promote']);
      // The new primary has no standby yet: with synchronous_standby_names still naming one,
      // every commit would wait for it forever. Until a new standby is attached, commit alone.
      const client = new pg.Client({
        connectionString: `postgres://postgres@127.0.0.1:${standbyPort}/postgres`,
      });
      await client.connect();
      try {
        await client.query(`ALTER SYSTEM SET synchronous_standby_names = ''`);
        await client.query('SELECT pg_reload_conf()');
      } finally {
        await client.end();
      }
    },
    async routedTo() {
      const csv = await (await fetch(`http://127.0.0.1:${statsPort}/;csv`)).text();
      // Every server HAProxy sends connections to, e.g. `pg1`; `pg1+pg2` while both are up. At its
      // start HAProxy takes every server as up until its checks fail `fall` times (2.6 has no
      // `init-state`), so a standby still gets connections for its first second; while it goes
      // down its status reads `UP 1/2`, and it still gets them.
      const up = csv
        .split('\n')
        .map((l) => l.split(','))
        .filter((f) => f[0] === 'postgres_primary' && f[1]?.startsWith('pg') && f[17]?.startsWith('UP'))
        .map((f) => f[1]);
      return up.length > 0 ? up.join('+') : undefined;
    },
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      try {
        proxy?.kill('SIGKILL');
        for (const data of [standby, primary])
          if (pidOf(data) !== undefined) await ctl(data, ['-m', 'immediate', 'stop']).catch(() => undefined);
      } finally {
        rmSync(dir, { recursive: true, force: true });
        unwatch();
      }
    },
  };
  try {
    // initdb's pg_hba.conf (trust) already admits replication connections from 127.0.0.1.
    await initPostgres(pgRun, primary, {
      comment: 'tern cluster suite: the primary',
      port: primaryPort,
      socketDir: dir,
      settings: [
        'max_connections = 80',
        'shared_buffers = 64MB',
        'wal_level = replica',
        'max_wal_senders = 4',
        // synchronous() turns on synchronous replication once Tern has migrated (hundreds of
        // commits, each waiting for the standby on a loaded machine, would take minutes).
        'synchronous_commit = on',
      ],
    });
    await ctl(primary, ['start']);
    await pgRun('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primaryPort),
      '-U',
      'postgres',
      '-D',
      standby,
      '-R',
      '-X',
      'stream',
    ]);
    appendFileSync(
      join(standby, 'postgresql.auto.conf'),
      [
        `port = ${standbyPort}`,
        `primary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres application_name=standby1'`,
        '',
      ].join('\n'),
    );
    await ctl(standby, ['start']);
    const direct = new pg.Client({
      connectionString: `postgres://postgres@127.0.0.1:${primaryPort}/postgres`,
    });
    await direct.connect();
    try {
      await waitFor(
        async () =>
          (await direct.query(`SELECT 1 FROM pg_stat_replication WHERE application_name = 'standby1'`))
            .rowCount === 1,
        { timeoutMs: 60_000, intervalMs: 200, description: 'the standby streaming' },
      );
    } finally {
      await direct.end();
    }
    const cfg = join(dir, 'haproxy.cfg');
    writeFileSync(
      cfg,
      readFileSync(join(root, 'infra/haproxy/postgres.cfg'), 'utf8')
        .replaceAll('@LISTEN@', `127.0.0.1:${proxyPort}`)
        .replaceAll('@PRIMARY@', `127.0.0.1:${primaryPort}`)
        .replaceAll('@STANDBY@', `127.0.0.1:${standbyPort}`)
        .replaceAll('@STATS@', `127.0.0.1:${statsPort}`),
    );
    proxy = spawn('haproxy', ['-f', cfg, '-db', '-q'], { stdio: 'ignore' });
    writeFileSync(join(dir, 'haproxy.pid'), String(proxy.pid));
    await waitFor(async () => (await pair.routedTo()) === 'pg1', {
      timeoutMs: 30_000,
      intervalMs: 200,
      description: 'HAProxy routing to the primary',
    });
  } catch (error) {
    await pair.destroy().catch(() => undefined);
    throw error;
  }
  return pair;
}
