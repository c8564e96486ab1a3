// Read-your-writes for SMTP submission (SPEC §25, issue 49 item 5): the `250` after DATA carries the
// send's position, read by the real clients (nodemailer's `info.response`, swaks' transcript); a
// `GET /emails/:id` over a socket with that `Tern-Consistent-With` answers 503 + Retry-After while
// the projector is stopped and 200 once it folds the send, never a 404.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SubmissionServer, selfSignedPair, type TlsPair } from '../../src/index.js';
import { openSendingWorld, type SendingWorld, wallClock } from '../sending-support.js';
import { closeAll, createKey, jwtFor, suffix } from '../support.js';
import { startTlsSubmission, submissionClient, swaks } from './session.js';

const TENANT = `smtp-pos-${suffix()}`;
let world: SendingWorld;
let tls: TlsPair;
let submission: SubmissionServer;
let apiUrl: string;
let sendKey: string;
let readKey: string;

beforeAll(async () => {
  [world, tls] = await Promise.all([openSendingWorld({ sender: false }), selfSignedPair('localhost')]);
  await world.app.listen({ port: 0, host: '127.0.0.1' });
  const address = world.app.server.address();
  apiUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const owner = jwtFor(wallClock, TENANT);
  sendKey = (await createKey(world.app, owner, TENANT, { scopes: ['email:send'] })).key;
  readKey = (await createKey(world.app, owner, TENANT, { scopes: ['email:read'] })).key;
  submission = await startTlsSubmission(world.app, tls);
}, 120_000);

afterAll(() => closeAll(submission, world));

/** The email id and the position of a `250 2.0.0 OK: queued as <id> position=<position>`. */
const accepted = (response: string) => {
  const m = /^250 2\.0\.0 OK: queued as (em_[A-Za-z0-9]{24}) position=([A-Za-z0-9_.:-]+)\s*$/m.exec(response);
  if (!m) throw new Error(`no id and position in ${response}`);
  return { id: m[1]!, position: m[2]! };
};

const read = (id: string, position: string) =>
  fetch(`${apiUrl}/emails/${id}`, {
    headers: { authorization: `Bearer ${readKey}`, 'tern-consistent-with': position },
  });

describe('SMTP submission answers the position of its send', () => {
  it('nodemailer, several recipients: 503 + Retry-After while the projector is stopped, then 200', async () => {
    await world.projector.stop();
    let restarted = false;
    try {
      const info = await submissionClient(submission.port, tls, sendKey).sendMail({
        from: 'Acme <hello@acme.test>',
        to: ['first@example.com', 'second@example.com'],
        cc: 'cc@example.com',
        bcc: 'hidden@example.com',
        subject: 'Position please',
        text: 'Hello',
      });
      const { id, position } = accepted(info.response);
      // The position names the send's last event, as POST /emails/send answers it.
      expect(position).toBe(`${id}:queued`);
      const stale = await read(id, position);
      expect(stale.status).toBe(503);
      expect(stale.headers.get('retry-after')).toBe('1');

      const pending = read(id, position);
      await world.projector.start();
      restarted = true;
      const fresh = await pending;
      expect(fresh.status).toBe(200);
      expect(await fresh.json()).toMatchObject({ id, subject: 'Position please' });
    } finally {
      if (!restarted) await world.projector.start();
    }
  });

  it('swaks: the 250 line carries the position and a read with it answers 200', async () => {
    const { stdout } = await swaks({
      port: submission.port,
      password: sendKey,
      to: 'one@example.com,two@example.com',
      subject: 'From swaks',
      body: 'Hello',
      timeoutMs: 30_000,
    });
    const line = stdout.split('\n').find((l) => l.includes('queued as'));
    expect(line).toBeDefined();
    const { id, position } = accepted(line!.replace(/^<~?\s*/, ''));
    const res = await read(id, position);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id, subject: 'From swaks' });
  });
});
