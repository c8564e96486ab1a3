import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from '../support/services.js';
import { type LoginRelay, startLoginRelay } from '../support/smtp-sink.js';
import { buildTern, ownerJwt, startTern, type TernProcess } from './tern-process.js';

const JWT_SECRET = 'relay-e2e-jwt-secret-0123456789abcdef';
const TENANT = 'relay-e2e';

type Detail = { id: string; status: string; events: { type: string }[] };

/**
 * Issue 24 item 13 on the built process: the relay (`smtp-server`, requiring AUTH) refuses Tern's
 * password with 535. Before the fix every 5xx was the recipient's hard bounce, so the address was
 * suppressed and every later send to it ended SUPPRESSED. Now the mail is delayed and retried,
 * `/ready` and `/metrics` say the provider is failing, and nobody is suppressed; once the relay
 * takes the login again, a 550 to a recipient's RCPT TO is still a bounce (and suppresses it).
 */
describe('a relay refusing the login never suppresses the recipient (built process, real relay)', () => {
  let tern: TernProcess;
  let relay: LoginRelay;
  let acceptedPassword = 'rotated-password';
  const jwt = ownerJwt(JWT_SECRET, TENANT);
  const auth = { authorization: `Bearer ${jwt}` };
  const get = async (id: string) =>
    (await (await fetch(`${tern.url}/emails/${id}`, { headers: auth })).json()) as Detail;
  const send = async (to: string) => {
    const res = await fetch(`${tern.url}/emails/send`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ from: 'hello@acme.test', to, subject: 'S', text: 'T' }),
    });
    expect(res.status, await res.clone().text()).toBe(202);
    return ((await res.json()) as { id: string }).id;
  };
  const suppressed = async () => {
    const res = await fetch(`${tern.url}/suppressions`, { headers: auth });
    return ((await res.json()) as { data: { email: string }[] }).data.map((s) => s.email);
  };

  beforeAll(async () => {
    buildTern();
    relay = await startLoginRelay(() => acceptedPassword);
    tern = await startTern({
      env: {
        NODE_ENV: 'development',
        DATA_DIR: tempDir('tern-e2e-relay-'),
        JWT_SECRET,
        INGEST_TOKEN: 'relay-e2e-ingest-token-0123456789abcdef',
        TRACKING_SECRET: 'relay-e2e-tracking-secret-0123456789',
        WEBHOOK_SECRETS_KEY: 'relay-e2e-webhook-secrets-key-0123456789',
        ENCRYPTION_KEY: 'relay-e2e-encryption-key-0123456789abcdef',
        // Tern still has the password the relay no longer takes.
        SMTP_URL: relay.urlWith('old-password'),
      },
    });
  }, 180_000);

  afterAll(async () => {
    await tern?.stop();
    await relay?.close();
  });

  it('535 at AUTH: delayed, /ready and /metrics say the provider fails, nothing suppressed; 550 at RCPT TO still bounces', async () => {
    const id = await send('ada@example.com');
    const delayed = await waitFor(
      async () => {
        const d = await get(id);
        return d.events.some((e) => e.type === 'email.delayed') ? d : null;
      },
      { timeoutMs: 20_000, description: 'email.delayed after the 535' },
    );
    expect(delayed.status).toBe('DELAYED');
    expect(delayed.events.map((e) => e.type)).not.toContain('email.bounced');
    expect(relay.rcpts).not.toContain('ada@example.com');

    const ready = await fetch(`${tern.url}/ready`);
    expect(ready.status).toBe(503);
    const why = ((await ready.json()) as { message: string }).message;
    expect(why).toMatch(/mail provider failing since .*: AUTH \w+ → 535/);
    expect(why).not.toContain('old-password');
    const metrics = await (await fetch(`${tern.url}/metrics`)).text();
    expect(metrics).toMatch(/^sender_provider_failing 1$/m);
    expect(metrics).toMatch(/^sender_provider_faults_total\{step="AUTH \w+",code="535"\} [1-9]/m);

    // Give the projector time to fold whatever the sender appended: still nobody suppressed.
    const other = await send('reject-first@example.com');
    await waitFor(async () => (await get(other)).status === 'DELAYED', { description: 'second delayed' });
    expect(await suppressed()).toEqual([]);

    // The relay takes the login again (the password was put back): a recipient it refuses at
    // RCPT TO is a hard bounce and is suppressed, as before.
    acceptedPassword = 'old-password';
    const rejected = await send('reject@example.com');
    await waitFor(async () => (await get(rejected)).status === 'BOUNCED', {
      timeoutMs: 20_000,
      description: 'BOUNCED at RCPT TO',
    });
    await waitFor(async () => (await suppressed()).includes('reject@example.com'), {
      description: 'reject@ suppressed',
    });
    const readyAgain = await fetch(`${tern.url}/ready`);
    expect(readyAgain.status).toBe(200);
    expect(await (await fetch(`${tern.url}/metrics`)).text()).toMatch(/^sender_provider_failing 0$/m);

    // And the address refused with 535 is not suppressed: a new send to it is handed to the relay.
    const later = await send('ada@example.com');
    await waitFor(async () => (await get(later)).status === 'SENT', {
      timeoutMs: 20_000,
      description: 'SENT',
    });
    expect(await suppressed()).toEqual(['reject@example.com']);
  }, 120_000);
});
