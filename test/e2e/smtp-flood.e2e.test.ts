// Issue 40, "Done when": a local flood of 20 000 connections to each SMTP listener of `npm start`
// (submission, the bounce mailbox and the inbound MX) leaves `/health` answering within 1 s throughout. The flood
// holds every connection the listener lets in (as the attack did) and drops the refused ones.
import { execFile } from 'node:child_process';
import net from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, tempDir, testServices, uniqueName } from '../support/services.js';
import { buildTern, freePort, startTern, type TernProcess } from './tern-process.js';

const exec = promisify(execFile);
// 20 000 per listener as the issue says; FLOOD_CONNECTIONS lowers it for a quick local run.
const FLOOD = Number(process.env.FLOOD_CONNECTIONS ?? 20_000);
const WAVE = 400;

/** Opens `total` connections in waves; holds those greeted 220, closes those refused. */
async function flood(port: number, total: number) {
  const held: net.Socket[] = [];
  let refused = 0;
  let failed = 0;
  for (let done = 0; done < total; done += WAVE) {
    const wave = Math.min(WAVE, total - done);
    await Promise.all(
      Array.from(
        { length: wave },
        () =>
          new Promise<void>((resolve) => {
            const socket = net.connect(port, '127.0.0.1');
            const timer = setTimeout(() => {
              failed += 1;
              socket.destroy();
              resolve();
            }, 10_000);
            socket.once('data', (d) => {
              clearTimeout(timer);
              if (d.toString().startsWith('220')) held.push(socket);
              else {
                refused += 1;
                socket.destroy();
              }
              resolve();
            });
            socket.on('error', () => undefined);
            socket.once('close', () => {
              clearTimeout(timer);
              resolve();
            });
          }),
      ),
    );
  }
  const count = held.length;
  for (const s of held) s.destroy();
  return { held: count, refused, failed };
}

describe('a flood of connections to every SMTP listener (issue 40)', () => {
  let tern: TernProcess | undefined;
  let drop: (() => Promise<void>) | undefined;
  let submissionPort: number;
  let bouncePort: number;
  let inboundPort: number;

  beforeAll(async () => {
    buildTern();
    const db = await createFreshDatabase();
    drop = db.drop;
    [submissionPort, bouncePort, inboundPort] = [await freePort(), await freePort(), await freePort()];
    tern = await startTern({
      env: {
        NODE_ENV: 'development',
        DATA_DIR: tempDir('tern-flood-'),
        DATABASE_URL: db.url,
        KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
        KAFKA_TOPIC: uniqueName('smtp-flood'),
        JWT_SECRET: 'smtp-flood-e2e-secret-0123456789abcdef',
        INGEST_TOKEN: 'smtp-flood-e2e-ingest-token-0123456789abcdef',
        TRACKING_SECRET: 'smtp-flood-e2e-tracking-secret-0123456789',
        WEBHOOK_SECRETS_KEY: 'smtp-flood-e2e-webhook-secrets-key-0123456789',
        ENCRYPTION_KEY: 'smtp-flood-e2e-encryption-key-0123456789abcdef',
        BOUNCE_DOMAIN: 'bounces.tern.test',
        SMTP_SUBMISSION_PORT: String(submissionPort),
        BOUNCE_SMTP_PORT: String(bouncePort),
        INBOUND_SMTP_PORT: String(inboundPort),
        INBOUND_DOMAIN: 'in.tern.test',
      },
      readyTimeoutMs: 150_000,
    });
  }, 240_000);

  afterAll(async () => {
    await tern?.stop();
    await drop?.();
  });

  it(`${FLOOD} connections to submission, then to the bounce mailbox, then to the inbound MX: /health answers within 1 s throughout`, async () => {
    const latencies: number[] = [];
    const statuses: number[] = [];
    let flooding = true;
    const probe = (async () => {
      while (flooding) {
        // Probed by curl, a process of its own: its time_total is the server's answer time, not
        // the delay of this test's event loop, which is busy opening the flood.
        const { stdout } = await exec('curl', [
          '-s',
          '-o',
          '/dev/null',
          '-w',
          '%{http_code} %{time_total}',
          '--max-time',
          '5',
          `${tern!.url}/health`,
        ]).catch(() => ({ stdout: '0 5' }));
        const [code, total] = stdout.trim().split(' ');
        statuses.push(Number(code));
        latencies.push(Number(total) * 1000);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const started = Date.now();
    const submission = await flood(submissionPort, FLOOD);
    const bounce = await flood(bouncePort, FLOOD);
    const inbound = await flood(inboundPort, FLOOD);
    flooding = false;
    await probe;
    const seconds = (Date.now() - started) / 1000;
    const worst = Math.max(...latencies);
    console.log(
      `flood: ${FLOOD} per listener in ${seconds.toFixed(1)} s; submission ${JSON.stringify(submission)}, bounce ${JSON.stringify(bounce)}, inbound ${JSON.stringify(inbound)}; /health ${latencies.length} probes, worst ${worst.toFixed(0)} ms, p50 ${latencies.sort((a, b) => a - b)[Math.floor(latencies.length / 2)]!.toFixed(0)} ms`,
    );
    // The per-client cap (SMTP_LISTEN_MAX_CONNECTIONS_PER_CLIENT, 20) held at any time; the rest
    // were refused. Submission closes a held connection at the AUTH deadline (30 s), which lets
    // the next 20 in: one per 30 s window of the flood.
    expect(submission.held).toBeLessThanOrEqual(20 * Math.ceil(seconds / 30));
    expect(bounce.held).toBeLessThanOrEqual(20 * Math.ceil(seconds / 30));
    expect(inbound.held).toBeLessThanOrEqual(20 * Math.ceil(seconds / 30));
    for (const listener of [submission, bounce, inbound]) {
      expect(listener.held).toBeGreaterThan(0);
      expect(listener.refused + listener.held + listener.failed).toBe(FLOOD);
    }
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(worst).toBeLessThan(1000);
    expect(latencies.length).toBeGreaterThan(10);
  }, 600_000);
});
