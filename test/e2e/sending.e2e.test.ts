import { execSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from '../support/services.js';
import { buildTern, startTern, type TernProcess } from './tern-process.js';

type Detail = { id: string; status: string; events: { type: string; occurredAt: string }[] };

/**
 * Issue 12's "done when", on `npm start` with no configuration (embedded stores, sandbox
 * provider): the banner's send reaches DELIVERED within 5 s, bounced@ ends BOUNCED and suppressed
 * (the next send to it SUPPRESSED), a scheduled
 * send can be cancelled, the same Idempotency-Key sends once, and the sender picks up mail that
 * fell due while the process was down.
 */
describe('npm start sends email through the sandbox provider', () => {
  beforeAll(() => buildTern(), 120_000);

  it('banner send → DELIVERED within 5 s; bounce, cancel, idempotency; due mail survives a restart', async () => {
    const dataDir = tempDir('tern-e2e-send-');
    let tern: TernProcess = await startTern({ env: { DATA_DIR: dataDir, NODE_ENV: 'development' } });
    try {
      const stdout = tern.stdout();
      const curl = stdout
        .split('\n')
        .map((l) => l.trim())
        .find((l) => l.startsWith('curl ') && l.includes('/emails/send'));
      expect(curl, stdout).toBeDefined();
      const jwt = /Bearer ([^']+)'/.exec(curl!)![1]!;
      const auth = { authorization: `Bearer ${jwt}` };
      const base = tern.url;
      const get = async (id: string) =>
        (await (await fetch(`${base}/emails/${id}`, { headers: auth })).json()) as Detail;
      const send = async (body: object, headers: Record<string, string> = {}) => {
        const res = await fetch(`${base}/emails/send`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ from: 'hello@acme.test', subject: 'S', text: 'T', ...body }),
        });
        expect(res.status, await res.clone().text()).toBe(202);
        return ((await res.json()) as { id: string }).id;
      };

      // The banner's command as printed.
      const started = Date.now();
      const { id } = JSON.parse(execSync(curl!, { shell: '/bin/bash' }).toString()) as { id: string };
      const delivered = await waitFor(async () => ((await get(id)).status === 'DELIVERED' ? get(id) : null), {
        timeoutMs: 5_000,
        intervalMs: 25,
        description: 'banner send DELIVERED within 5 s',
      });
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(delivered.events.map((e) => e.type)).toEqual(['email.queued', 'email.sent', 'email.delivered']);

      const bounced = await send({ to: 'bounced@sandbox.test' });
      await waitFor(async () => (await get(bounced)).status === 'BOUNCED', { description: 'BOUNCED' });
      // The projector put the hard-bounced address on the suppression list (SPEC §13) …
      const entry = await waitFor(
        async () => {
          const res = await fetch(`${base}/suppressions`, { headers: auth });
          const list = (await res.json()) as { data: { email: string; reason: string; source: string }[] };
          return list.data.find((s) => s.email === 'bounced@sandbox.test');
        },
        { description: 'bounced@sandbox.test suppressed' },
      );
      expect(entry).toMatchObject({ reason: 'hard_bounce', source: 'bounce' });
      // … so the sender never hands it to the provider again.
      const resent = await send({ to: 'bounced@sandbox.test' });
      await waitFor(async () => (await get(resent)).status === 'SUPPRESSED', { description: 'SUPPRESSED' });

      const scheduled = await send({
        to: 'delivered@sandbox.test',
        scheduledAt: new Date(Date.now() + 3600_000).toISOString(),
      });
      const cancel = await fetch(`${base}/emails/${scheduled}/cancel`, { method: 'POST', headers: auth });
      expect(cancel.status).toBe(200);
      await waitFor(async () => (await get(scheduled)).status === 'CANCELLED', { description: 'CANCELLED' });

      const one = await send({ to: 'delivered@sandbox.test' }, { 'idempotency-key': 'e2e-once' });
      const two = await send({ to: 'delivered@sandbox.test' }, { 'idempotency-key': 'e2e-once' });
      expect(two).toBe(one);

      // Due while nobody runs: sent after the restart.
      const dueSoon = await send({
        to: 'delivered@sandbox.test',
        scheduledAt: new Date(Date.now() + 2_000).toISOString(),
      });
      expect(await tern.stop()).toBe(0);
      await new Promise((r) => setTimeout(r, 2_500));
      tern = await startTern({ env: { DATA_DIR: dataDir, NODE_ENV: 'development' } });
      const again = tern.url;
      await waitFor(
        async () => {
          const res = await fetch(`${again}/emails/${dueSoon}`, { headers: auth });
          return ((await res.json()) as Detail).status === 'DELIVERED';
        },
        { timeoutMs: 15_000, description: 'due mail delivered after the restart' },
      );
    } finally {
      await tern.stop();
    }
  }, 180_000);
});
