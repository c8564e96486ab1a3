// client.campaigns.* and client.sequences.* against the real query service (createApiApp on a
// fresh Postgres database, listening on a loopback port), with the real fan-out and scheduler:
// a sent campaign with its recipients and a sequence step sent are states only those jobs of
// services/worker make (hence the SDK's devDependency on @tern/worker).

import { createCampaignFanout, createSequenceScheduler } from '@tern/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { createClock, createKey, jwtFor, suffix } from '../../../services/api/test/support.js';
import { init, TernApiError } from '../src/index.js';
import { useLoopbackApi, workerOptions } from './support.js';

const clock = createClock(new Date().toISOString());
const tenantId = `sdk-campaigns-${suffix()}`;
const api = useLoopbackApi(clock);
let key: string;

beforeAll(async () => {
  key = (
    await createKey(api.app, jwtFor(clock, tenantId), tenantId, {
      scopes: ['contacts:write', 'campaigns:read', 'campaigns:write', 'sequences:read', 'sequences:write'],
    })
  ).key;
});

describe('client.campaigns', () => {
  it('create, update, send, get with stats, list, cancel, remove', async () => {
    const client = init({ apiKey: key, baseUrl: api.baseUrl });
    await client.contacts.create({ email: 'ada@example.com', audiences: ['news'] });
    await client.contacts.create({ email: 'bob@example.com', audiences: ['news'] });
    const draft = await client.campaigns.create({
      name: 'News',
      from: 'news@acme.test',
      audience: 'news',
      subject: 'Hi',
      text: 'Hello',
    });
    expect(draft.status).toBe('draft');
    expect((await client.campaigns.update(draft.id, { name: 'June news' })).name).toBe('June news');
    expect(await client.campaigns.send(draft.id)).toEqual({ id: draft.id, status: 'sending' });
    await createCampaignFanout(workerOptions(api.stores, clock)).runOnce();
    const sent = await client.campaigns.get(draft.id);
    expect(sent.status).toBe('sent');
    expect(sent.stats.recipients).toBe(2);
    // Queued, not yet sent by anyone: seven empty days ending today.
    const daily = await client.campaigns.daily(draft.id, { days: 7 });
    expect(daily.days).toBe(7);
    expect(daily.daily).toHaveLength(7);
    expect(daily.daily.every((d) => d.sent === 0 && d.delivered === 0)).toBe(true);
    expect((await client.campaigns.list({ limit: 10 })).data.map((c) => c.id)).toEqual([draft.id]);

    const other = await client.campaigns.create({
      name: 'x',
      from: 'news@acme.test',
      audience: 'news',
      subject: 's',
      html: '<p>h</p>',
    });
    expect(await client.campaigns.cancel(other.id)).toEqual({ id: other.id, status: 'cancelled' });
    const third = await client.campaigns.create({
      name: 'y',
      from: 'news@acme.test',
      audience: 'news',
      subject: 's',
      text: 't',
    });
    await client.campaigns.remove(third.id);
    const err = await client.campaigns.get(third.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TernApiError);
    expect(err).toMatchObject({ status: 404, message: 'Campaign not found' });
    const conflict = await client.campaigns.remove(draft.id).catch((e: unknown) => e);
    expect(conflict).toMatchObject({ status: 409 });
  });
});

describe('client.sequences', () => {
  it('create, enroll, the first step is sent, unenroll, get with per-step stats', async () => {
    const client = init({ apiKey: key, baseUrl: api.baseUrl });
    await client.contacts.create({ email: 'eve@example.com' });
    const seq = await client.sequences.create({
      name: 'Onboarding',
      from: 'hello@acme.test',
      steps: [
        { delayMinutes: 0, subject: 'Welcome', text: 'one' },
        { delayMinutes: 60, subject: 'Tips', text: 'two' },
      ],
    });
    const enrollment = await client.sequences.enroll(seq.id, { email: 'eve@example.com' });
    expect(enrollment).toMatchObject({ sequenceId: seq.id, state: 'active', nextStep: 0 });
    expect(await createSequenceScheduler(workerOptions(api.stores, clock)).runOnce()).toBe(1);
    await client.sequences.unenroll(seq.id, enrollment.id);
    const got = await client.sequences.get(seq.id);
    expect(got.steps.map((s) => s.stats.recipients)).toEqual([1, 0]);
    expect(got.enrollments).toEqual({ active: 0, completed: 0, stopped: 0, cancelled: 1 });
    expect((await client.sequences.list()).data.map((s) => s.id)).toEqual([seq.id]);
    const missing = await client.sequences
      .enroll(seq.id, { email: 'nobody@example.com' })
      .catch((e: unknown) => e);
    expect(missing).toMatchObject({ status: 404, message: 'Contact not found' });
    // The enrollments, with their address and place; the steps edited.
    const listed = await client.sequences.enrollments(seq.id, { state: 'cancelled' });
    expect(listed.data).toEqual([
      expect.objectContaining({
        id: enrollment.id,
        email: 'eve@example.com',
        state: 'cancelled',
        nextStep: 1,
      }),
    ]);
    expect((await client.sequences.enrollments(seq.id, { state: 'active' })).meta.total).toBe(0);
    const edited = await client.sequences.update(seq.id, {
      name: 'Onboarding v2',
      steps: [{ delayMinutes: 0, subject: 'Welcome!', text: 'one' }],
    });
    expect(edited).toMatchObject({
      name: 'Onboarding v2',
      steps: [expect.objectContaining({ subject: 'Welcome!' })],
    });
  });
});
