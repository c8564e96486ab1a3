import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { signDashboardToken } from '@tern/auth';

/**
 * `npm run seed:demo`: posts a realistic 90-day stream of delivery events for the demo tenant
 * through the public ingest endpoint (never into the tables), so analytics have something to show,
 * then sends real emails through `POST /emails/batch` (sandbox recipients with every outcome, a
 * few scheduled) so the demo shows timelines the sender wrote.
 *
 * TERN_URL (default http://127.0.0.1:3000), INGEST_TOKEN (default: the dev secret in DATA_DIR),
 * TERN_API_KEY (a key with email:send; default: a dashboard JWT signed with the dev JWT secret),
 * SEED_EMAILS (default 3000), SEED_SENDS (default 60), SEED_TENANT (default demo).
 */
const url = process.env.TERN_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`;
const tenantId = process.env.SEED_TENANT ?? 'demo';
const emails = Number(process.env.SEED_EMAILS ?? 3000);
const sends = Number(process.env.SEED_SENDS ?? 60);

function devSecrets(): { ingestToken?: string; jwtSecret?: string } {
  const file = join(process.env.DATA_DIR ?? './data', 'dev-secrets.json');
  return existsSync(file)
    ? (JSON.parse(readFileSync(file, 'utf8')) as { ingestToken?: string; jwtSecret?: string })
    : {};
}

function ingestToken(): string {
  const token = process.env.INGEST_TOKEN ?? devSecrets().ingestToken;
  if (token) return token;
  throw new Error('seed:demo needs INGEST_TOKEN (or the dev secrets that `npm start` writes to DATA_DIR)');
}

function sendCredential(): string {
  if (process.env.TERN_API_KEY) return process.env.TERN_API_KEY;
  const secret = devSecrets().jwtSecret;
  if (!secret)
    throw new Error('seed:demo needs TERN_API_KEY (or the dev secrets that `npm start` writes to DATA_DIR)');
  return signDashboardToken({ secret, tenantId, role: 'owner', sub: 'seed-demo', expiresInSeconds: 600 });
}

const SANDBOX = [
  'delivered',
  'delivered',
  'delivered',
  'bounced',
  'complained',
  'delayed',
  'failed',
] as const;

/** Sends through the API: sandbox recipients with every outcome, one in ten scheduled a few minutes ahead. */
export function demoSends(count: number, now = Date.now()) {
  return Array.from({ length: count }, (_, i) => {
    const template = TEMPLATES[i % TEMPLATES.length]!;
    return {
      from: 'Acme <hello@acme.test>',
      to: i % 3 === 0 ? `user${i}@example.com` : `${SANDBOX[i % SANDBOX.length]}@sandbox.test`,
      subject: SUBJECTS[template]!,
      html: `<p>${SUBJECTS[template]}</p><p><a href="https://example.com/${template}">Open</a></p>`,
      text: SUBJECTS[template]!,
      tags: [template, 'seed-send'],
      ...(i % 10 === 9 ? { scheduledAt: new Date(now + (2 + (i % 5)) * 60_000).toISOString() } : {}),
    };
  });
}

/** Deterministic PRNG (mulberry32), so every seeded demo looks the same. */
function prng(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TEMPLATES = ['welcome', 'password-reset', 'receipt', 'weekly-digest', 'trial-ending', 'invite'];
const PROVIDERS = ['ses', 'postmark', 'sendgrid'];
const SUBJECTS: Record<string, string> = {
  welcome: 'Welcome aboard',
  'password-reset': 'Reset your password',
  receipt: 'Your receipt',
  'weekly-digest': 'Your week in review',
  'trial-ending': 'Your trial ends soon',
  invite: 'You have been invited',
};

type Ev = { id: string; type: string; tenantId: string; emailId: string; occurredAt: string; data?: object };

export function demoEvents(count: number, now = Date.now(), seed = 42): Ev[] {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const out: Ev[] = [];
  for (let i = 0; i < count; i++) {
    const emailId = `demo-${i}`;
    const created = now - Math.floor(rnd() * 90 * 86_400_000);
    const at = (offsetMs: number) => new Date(Math.min(created + offsetMs, now)).toISOString();
    const ev = (n: number, type: string, offsetMs: number, data?: object): Ev => ({
      id: `${emailId}-${n}`,
      type,
      tenantId,
      emailId,
      occurredAt: at(offsetMs),
      ...(data ? { data } : {}),
    });
    const template = rnd() < 0.85 ? pick(TEMPLATES) : undefined;
    out.push(
      ev(0, 'email.queued', 0, {
        toEmail: `user${Math.floor(rnd() * 100_000)}@example.com`,
        subject: template ? SUBJECTS[template]! : 'A note from us',
        ...(template ? { templateId: template } : {}),
        tags: template ? [template] : ['adhoc'],
      }),
    );
    const r = rnd();
    if (r < 0.01) {
      out.push(ev(1, 'email.suppressed', 500, { reason: 'address on the suppression list' }));
      continue;
    }
    if (r < 0.04) {
      out.push(ev(1, 'email.failed', 800, { reason: 'provider rejected the message' }));
      continue;
    }
    out.push(
      ev(1, 'email.sent', 1_000, {
        provider: pick(PROVIDERS),
        messageId: `msg-${i}-${Math.floor(rnd() * 1e9)}`,
      }),
    );
    const outcome = rnd();
    if (outcome < 0.05) {
      out.push(
        ev(2, 'email.bounced', 5_000, {
          bounceType: rnd() < 0.7 ? 'hard' : 'soft',
          reason: 'mailbox unavailable',
        }),
      );
      continue;
    }
    if (outcome < 0.1) out.push(ev(2, 'email.delayed', 3_000, { reason: 'greylisted' }));
    if (outcome < 0.97) out.push(ev(3, 'email.delivered', 8_000));
    else continue; // still in flight: SENT or DELAYED
    if (rnd() < 0.45) {
      const opens = 1 + Math.floor(rnd() * 3);
      for (let o = 0; o < opens; o++)
        out.push(ev(10 + o, 'email.opened', 60_000 * (5 + o * 30), { userAgent: 'Mozilla/5.0' }));
      if (rnd() < 0.35) out.push(ev(20, 'email.clicked', 60_000 * 7, { url: 'https://example.com/offer' }));
      if (rnd() < 0.01) out.push(ev(30, 'email.complained', 60_000 * 9, { feedbackType: 'abuse' }));
    }
  }
  return out;
}

async function main(): Promise<void> {
  const token = ingestToken();
  const events = demoEvents(emails);
  const started = performance.now();
  for (let i = 0; i < events.length; i += 1000) {
    const res = await fetch(`${url}/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events: events.slice(i, i + 1000) }),
    });
    if (res.status !== 202) throw new Error(`POST /events answered ${res.status}: ${await res.text()}`);
  }
  const ms = Math.round(performance.now() - started);
  let sent = 0;
  const credential = sends > 0 ? sendCredential() : '';
  const outgoing = demoSends(sends);
  for (let i = 0; i < outgoing.length; i += 100) {
    const res = await fetch(`${url}/emails/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
      body: JSON.stringify(outgoing.slice(i, i + 100)),
    });
    if (res.status !== 202) throw new Error(`POST /emails/batch answered ${res.status}: ${await res.text()}`);
    sent += ((await res.json()) as { data: unknown[] }).data.length;
  }
  process.stdout.write(
    `seeded ${emails} emails (${events.length} events) for tenant "${tenantId}" in ${ms} ms via ${url}/events; ` +
      `sent ${sent} emails through POST /emails/batch\n`,
  );
}

if (process.argv[1] && /seed-demo\.(ts|js)$/.test(process.argv[1])) {
  main().catch((error: unknown) => {
    process.stderr.write(`seed:demo failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
