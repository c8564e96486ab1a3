import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { signDashboardToken } from '@tern/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPOSE_FILE, type TernService, ternServices } from '../../infra/compose/check.js';
import { getStage, runCommands } from '../../infra/docker/dockerfile.mjs';
import { assembleRuntimeTree, type RuntimeTree } from '../../infra/docker/runtime-tree.js';
import { buildAll } from '../../services/dashboard/test/harness.js';
import { createFreshDatabase, tempDir, testServices, uniqueName, waitFor } from '../support/services.js';
import { freePort } from './tern-process.js';

/**
 * The image without a Docker engine: the runtime stage's files assembled as the Dockerfile
 * says (its prod-deps `npm ci --omit=dev` line run in a copy of the build context, then its COPY
 * lines), and docker-compose.yml's roles started from them with their compose command and
 * variables — only the store addresses, ports and data directory changed for this machine. So a
 * runtime file the Dockerfile forgets (a migration, the dashboard, a dependency only installed
 * with dev ones) or an install the lockfile refuses fails here, not on the first
 * `docker compose up`. First the default build (`docker build .`, with the embedded ClickHouse
 * engine), then the one compose makes (EMBEDDED_CLICKHOUSE=false).
 */

interface Role {
  child: ChildProcess;
  port: number;
  output: () => string;
  exited: Promise<number | null>;
}

describe('the production image, assembled outside Docker', () => {
  let tree: RuntimeTree;
  let services: Map<string, TernService>;
  let db: { url: string; drop(): Promise<void> };
  let stores: Record<string, string>;
  let healthcheck: string[];
  const started: Role[] = [];

  beforeAll(async () => {
    buildAll();
    tree = assembleRuntimeTree();
    services = new Map(
      (await ternServices({ text: readFileSync(COMPOSE_FILE, 'utf8') })).map((s) => [s.name, s]),
    );
    healthcheck = getStage(tree.dockerfile, 'runtime').instructions.findLast(
      (i) => i.keyword === 'HEALTHCHECK',
    )?.exec as string[];
    db = await createFreshDatabase();
    stores = {
      DATABASE_URL: db.url,
      KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
      KAFKA_TOPIC: uniqueName('image'),
      KAFKA_PARTITIONS: '2',
      HOST: '127.0.0.1',
      // One process per role here; in a container INGEST_WORKERS defaults to one per core.
      INGEST_WORKERS: '1',
      LOG_LEVEL: 'warn',
    };
  }, 600_000);

  afterAll(async () => {
    for (const r of started) if (r.child.exitCode === null) r.child.kill('SIGKILL');
    await db?.drop();
    if (tree) rmSync(dirname(tree.dir), { recursive: true, force: true });
  });

  /** Starts `argv` (`node <entry> …`) in the assembled /app, with the container's variables. */
  async function start(argv: readonly string[], env: Record<string, string>): Promise<Role> {
    const port = await freePort();
    const [program, ...args] = argv;
    expect(program).toBe('node');
    const child = spawn(process.execPath, args, {
      cwd: tree.dir,
      env: { PATH: process.env.PATH ?? '', HOME: tempDir(), ...env, PORT: String(port), DATA_DIR: tempDir() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout?.on('data', (d) => {
      output += d;
    });
    child.stderr?.on('data', (d) => {
      output += d;
    });
    const role = {
      child,
      port,
      output: () => output,
      exited: new Promise<number | null>((r) => child.once('exit', (code) => r(code))),
    };
    started.push(role);
    return role;
  }

  /** The image's HEALTHCHECK command, run as Docker runs it: in the container, with its PORT. */
  function healthy(role: Role): boolean {
    const [program, ...args] = healthcheck;
    expect(program).toBe('node');
    try {
      execFileSync(process.execPath, args, {
        env: { PATH: process.env.PATH ?? '', PORT: String(role.port) },
        stdio: 'pipe',
      });
      return true;
    } catch {
      return false;
    }
  }

  async function untilHealthy(role: Role, name: string): Promise<void> {
    await waitFor(
      () => {
        if (role.child.exitCode !== null) throw new Error(`${name} exited: ${role.output()}`);
        return healthy(role);
      },
      { timeoutMs: 120_000, intervalMs: 500, description: `${name}: the image's HEALTHCHECK passes` },
    );
  }

  async function stop(role: Role): Promise<number | null> {
    role.child.kill('SIGTERM');
    return role.exited;
  }

  it('carries what the roles read at run time, and no source: bundles, dashboard, migrations, production dependencies', () => {
    for (const path of [
      'services/tern/dist/main.js',
      'services/dashboard/dist/index.html',
      'infra/migrations/postgres/0001_init.sql',
      'infra/migrations/clickhouse/0001_email_daily_v1.sql',
      'node_modules/fastify/package.json',
      'node_modules/@chdb/lib-linux-x64-gnu/package.json',
    ]) {
      expect(existsSync(join(tree.dir, path)), path).toBe(true);
    }
    for (const path of [
      'services/tern/src',
      'packages',
      'node_modules/vitest',
      'node_modules/typescript',
      'node_modules/@tern',
    ]) {
      expect(existsSync(join(tree.dir, path)), path).toBe(false);
    }
  });

  it("compose's roles start from it, pass the image's HEALTHCHECK, carry an email through, and stop on SIGTERM", async () => {
    const roles = new Map<string, Role>();
    for (const name of ['ingest', 'sender', 'dispatcher']) {
      const service = services.get(name)!;
      roles.set(name, await start(service.argv!, { ...service.env, ...stores }));
    }
    // No ClickHouse server on this machine: projector and api run together on the embedded
    // engine (chDB) the image carries, with the api service's variables minus CLICKHOUSE_URL.
    const api = services.get('api')!;
    const { CLICKHOUSE_URL: _server, ...apiEnv } = api.env;
    const [node, entry] = api.argv!;
    roles.set(
      'projector-api',
      await start([node!, entry!, '--services=projector,api'], { ...apiEnv, ...stores }),
    );
    for (const [name, role] of roles) await untilHealthy(role, name);

    const ingest = roles.get('ingest')!;
    const worker = roles.get('projector-api')!;
    const tenant = 'image-tenant';
    const at = new Date().toISOString();
    const posted = await fetch(`http://127.0.0.1:${ingest.port}/events`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${services.get('ingest')!.env.INGEST_TOKEN}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        events: [
          {
            id: 'q1',
            type: 'email.queued',
            tenantId: tenant,
            emailId: 'm1',
            occurredAt: at,
            data: { toEmail: 'a@example.com', subject: 'S' },
          },
          { id: 'd1', type: 'email.delivered', tenantId: tenant, emailId: 'm1', occurredAt: at },
        ],
      }),
    });
    expect(posted.status).toBe(202);
    const jwt = signDashboardToken({
      secret: api.env.JWT_SECRET!,
      tenantId: tenant,
      role: 'owner',
      expiresInSeconds: 600,
    });
    const auth = { authorization: `Bearer ${jwt}` };
    await waitFor(
      async () => {
        const res = await fetch(`http://127.0.0.1:${worker.port}/emails/logs`, { headers: auth });
        const body = (await res.json()) as { data: { id: string; status: string }[] };
        return body.data.some((d) => d.id === 'm1' && d.status === 'DELIVERED');
      },
      { timeoutMs: 90_000, description: 'the email in the delivery log' },
    );
    // ClickHouse follows the log a moment later (the batch is shipped after its commit).
    const sent = await waitFor(
      async () => {
        const res = await fetch(`http://127.0.0.1:${worker.port}/analytics/summary`, { headers: auth });
        const totals = ((await res.json()) as { totals: { sent: number } }).totals;
        return totals.sent > 0 ? totals.sent : undefined;
      },
      { timeoutMs: 30_000, description: 'the summary counting the email' },
    );
    expect(sent).toBe(1);
    const dashboard = await fetch(`http://127.0.0.1:${worker.port}/`);
    expect(dashboard.status).toBe(200);
    expect(await dashboard.text()).toContain('<html');

    // node is the process that got the signal (no npm between): each role stops cleanly.
    for (const [name, role] of roles) expect(await stop(role), `${name}: ${role.output()}`).toBe(0);
  }, 300_000);

  it('built with EMBEDDED_CLICKHOUSE=false, as compose builds it, it leaves chDB out: the roles that need no engine run, the embedded engine is refused', async () => {
    // The prod-deps line that reads the build arg, run on the assembled node_modules.
    const slim = runCommands(tree.dockerfile, 'prod-deps').filter((c) => c.includes('EMBEDDED_CLICKHOUSE'));
    expect(slim).toHaveLength(1);
    execFileSync('/bin/sh', ['-c', slim[0]!], {
      cwd: tree.dir,
      env: { ...process.env, EMBEDDED_CLICKHOUSE: 'false' },
    });
    expect(existsSync(join(tree.dir, 'node_modules/@chdb'))).toBe(false);

    for (const name of ['ingest', 'sender', 'dispatcher']) {
      const service = services.get(name)!;
      const role = await start(service.argv!, { ...service.env, ...stores });
      await untilHealthy(role, name);
      expect(await stop(role), `${name}: ${role.output()}`).toBe(0);
    }

    const api = services.get('api')!;
    const { CLICKHOUSE_URL: _server, ...apiEnv } = api.env;
    const [node, entry] = api.argv!;
    const embedded = await start([node!, entry!, '--services=projector,api'], { ...apiEnv, ...stores });
    expect(await embedded.exited).toBe(1);
    expect(embedded.output()).toMatch(/@chdb\/lib-linux/);
  }, 180_000);
});
