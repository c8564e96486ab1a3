import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { selfSignedPair } from '@tern/api';
import { signDashboardToken } from '@tern/auth';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, tempDir, testServices, uniqueName, waitFor } from '../support/services.js';
import {
  buildTern,
  freePort,
  freePorts,
  runTernToExit,
  startTern,
  type TernProcess,
} from './tern-process.js';

const JWT_SECRET = 'smtp-e2e-secret-0123456789abcdef';
const secrets = {
  JWT_SECRET,
  INGEST_TOKEN: 'smtp-e2e-ingest-token-0123456789abcdef',
  TRACKING_SECRET: 'smtp-e2e-tracking-secret-0123456789',
  WEBHOOK_SECRETS_KEY: 'smtp-e2e-webhook-secrets-key-0123456789',
  ENCRYPTION_KEY: 'smtp-e2e-encryption-key-0123456789abcdef',
};

const procs: TernProcess[] = [];

async function keyAndAuth(url: string, tenant: string) {
  const auth = {
    authorization: `Bearer ${signDashboardToken({ secret: JWT_SECRET, tenantId: tenant, role: 'owner', expiresInSeconds: 600 })}`,
  };
  const res = await fetch(`${url}/tenants/${tenant}/api-keys`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'smtp', scopes: ['email:send'] }),
  });
  expect(res.status).toBe(201);
  return { key: ((await res.json()) as { key: string }).key, auth };
}

async function sendAndDeliver(opts: { url: string; tenant: string; port: number; ca: string }) {
  const { key, auth } = await keyAndAuth(opts.url, opts.tenant);
  const info = await nodemailer
    .createTransport({
      host: '127.0.0.1',
      port: opts.port,
      secure: false,
      requireTLS: true,
      tls: { ca: opts.ca, servername: 'localhost' },
      auth: { user: 'apikey', pass: key },
    })
    .sendMail({ from: 'hello@acme.test', to: 'delivered@sandbox.test', subject: 'over SMTP', text: 'hi' });
  const id = /queued as (em_\w+)/.exec(info.response)?.[1];
  expect(id, info.response).toBeDefined();
  const email = await waitFor(
    async () => {
      const r = await fetch(`${opts.url}/emails/${id}`, { headers: auth });
      const body = (await r.json()) as { status: string; subject: string };
      if (body.status !== 'DELIVERED') throw new Error(`status ${body.status}: ${JSON.stringify(body)}`);
      return body;
    },
    { timeoutMs: 60_000, description: `${id} delivered` },
  );
  expect(email.subject).toBe('over SMTP');
}

describe('SMTP submission as a process role (SPEC §22)', () => {
  beforeAll(() => buildTern(), 120_000);
  afterAll(async () => {
    for (const p of procs) await p.stop();
  });

  it('npm start with SMTP_SUBMISSION_PORT: a generated self-signed pair, mail delivered', async () => {
    const dataDir = tempDir();
    const [port, http] = (await freePorts(2)) as [number, number];
    const tern = await startTern({
      env: { ...secrets, DATA_DIR: dataDir, PORT: String(http), SMTP_SUBMISSION_PORT: String(port) },
      // The first start on embedded stores migrates PGlite and opens chDB: slow on a busy machine.
      readyTimeoutMs: 150_000,
    });
    procs.push(tern);
    await waitFor(async () => (await fetch(`${tern.url}/ready`)).ok, {
      timeoutMs: 90_000,
      description: 'ready',
    });
    const ca = readFileSync(join(dataDir, 'smtp-tls', 'cert.pem'), 'utf8');
    await sendAndDeliver({ url: tern.url, tenant: 'smtp-all-in-one', port, ca });
  }, 240_000);

  it('--services=submission alone in production (its own TLS pair) next to a worker, on Kafka and Postgres', async () => {
    const db = await createFreshDatabase();
    try {
      const dir = tempDir();
      const pair = await selfSignedPair('localhost');
      writeFileSync(join(dir, 'cert.pem'), pair.cert);
      writeFileSync(join(dir, 'key.pem'), pair.key);
      const common = {
        ...secrets,
        NODE_ENV: 'production',
        DATABASE_URL: db.url,
        KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
        KAFKA_TOPIC: uniqueName('smtp-events'),
        KAFKA_PARTITIONS: '2',
        // Split mode in production: tracking links must name where the api is reached.
        PUBLIC_URL: 'http://127.0.0.1:3999',
      };
      const worker = await startTern({
        env: { ...common, DATA_DIR: tempDir() },
        args: ['--services=projector,api,sender'],
        readyTimeoutMs: 150_000,
      });
      procs.push(worker);
      // The projector joins its consumer group after the server listens; a new group starts at the
      // log's end, so mail is sent once /ready says it joined.
      await waitFor(async () => (await fetch(`${worker.url}/ready`)).ok, {
        timeoutMs: 90_000,
        description: 'worker ready',
      });
      const [port, http] = (await freePorts(2)) as [number, number];
      const submission = await startTern({
        env: {
          ...common,
          DATA_DIR: tempDir(),
          PORT: String(http),
          SMTP_SUBMISSION_PORT: String(port),
          SMTP_TLS_CERT: join(dir, 'cert.pem'),
          SMTP_TLS_KEY: join(dir, 'key.pem'),
        },
        args: ['--services=submission'],
      });
      procs.push(submission);
      await sendAndDeliver({ url: worker.url, tenant: 'smtp-split', port, ca: pair.cert });
      // Without a TLS pair, production refuses to start submission at all.
      const refused = await runTernToExit(
        { ...common, DATA_DIR: tempDir(), SMTP_SUBMISSION_PORT: String(await freePort()) },
        ['--services=submission'],
      );
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(
        /SMTP_SUBMISSION_PORT needs SMTP_TLS_CERT and SMTP_TLS_KEY in production/,
      );
    } finally {
      for (const p of procs.splice(0)) await p.stop();
      await db.drop();
    }
  }, 300_000);
});
