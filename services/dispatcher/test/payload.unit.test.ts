import { type DeliveryEvent, deliveryEventSchema } from '@tern/contracts';
import { type EmailState, foldEmail } from '@tern/domain';
import { viewAt } from '@tern/read-models';
import { describe, expect, it } from 'vitest';
import { buildPayload as buildFromView } from '../src/payload.js';

const ev = (id: string, type: string, occurredAt: string, data?: object): DeliveryEvent =>
  deliveryEventSchema.parse({
    id,
    type,
    tenantId: 'acme',
    emailId: 'em_1',
    occurredAt,
    ...(data ? { data } : {}),
  });

const queued = ev('e1', 'email.queued', '2026-06-15T12:00:00.000Z', {
  toEmail: 'ada@example.com',
  subject: 'Welcome',
  tags: ['onboarding'],
});
const bounced = ev('e2', 'email.bounced', '2026-06-15T12:00:05.000Z', { bounceType: 'hard', reason: '550' });

/** The body as the dispatcher builds it: from the email log's view of the projected state as of the event. */
const buildPayload = (event: DeliveryEvent, projected: EmailState | null) =>
  buildFromView(event, viewAt(projected, event));

describe('buildPayload', () => {
  it('is { type, timestamp, data } with the email’s fields and the event’s own', () => {
    expect(buildPayload(bounced, foldEmail([queued]))).toEqual({
      type: 'email.bounced',
      timestamp: '2026-06-15T12:00:05.000Z',
      data: {
        bounceType: 'hard',
        reason: '550',
        emailId: 'em_1',
        tenantId: 'acme',
        projectId: null,
        to: 'ada@example.com',
        subject: 'Welcome',
        tags: ['onboarding'],
        status: 'BOUNCED',
      },
    });
  });

  it('carries the project of the email’s email.queued on every later event', () => {
    const inProject = ev('e4', 'email.queued', '2026-06-15T12:00:00.000Z', {
      toEmail: 'ada@example.com',
      subject: 'Welcome',
      projectId: 'prj_4Hs9dK2mQ7wE1rT6yU3iO8pA',
    });
    expect(buildPayload(bounced, foldEmail([inProject])).data.projectId).toBe('prj_4Hs9dK2mQ7wE1rT6yU3iO8pA');
    expect(buildPayload(inProject, null).data.projectId).toBe('prj_4Hs9dK2mQ7wE1rT6yU3iO8pA');
  });

  it('the status includes the event even when the projection has not applied it yet, and a later one wins', () => {
    expect(buildPayload(bounced, foldEmail([queued])).data.status).toBe('BOUNCED');
    // Already projected with a higher-ranked status: the fold keeps it (order-independent).
    const delivered = ev('e3', 'email.delivered', '2026-06-15T12:00:03.000Z');
    expect(buildPayload(delivered, foldEmail([queued, bounced])).data.status).toBe('BOUNCED');
  });

  it('without a projected email: a queued event carries its own fields; any other has nulls', () => {
    expect(buildPayload(queued, null).data).toMatchObject({ to: 'ada@example.com', status: 'QUEUED' });
    expect(buildPayload(bounced, null).data).toMatchObject({
      to: null,
      subject: null,
      tags: [],
      status: 'BOUNCED',
    });
  });

  it('the event’s fields never override the email’s identity', () => {
    const clicked = ev('e4', 'email.clicked', '2026-06-15T12:01:00.000Z', { url: 'https://x.example' });
    const data = buildPayload(clicked, foldEmail([queued])).data;
    expect(data).toMatchObject({ url: 'https://x.example', emailId: 'em_1', tenantId: 'acme' });
  });
});
