import { createHmac, randomBytes } from 'node:crypto';
import { signTrackingToken } from '@tern/auth';
import {
  createContactStore,
  createSegmentStore,
  createTopicStore,
  enroll,
  insertAutomation,
  insertCampaign,
  insertContact,
  insertSequence,
} from '@tern/bulk';
import { MISSING_SCOPE_MESSAGE, SCOPES, type Scope } from '@tern/contracts';
import { createUnsubscribeToken } from '@tern/domain';
import { createEventStream, createPostgresEventLog, type PostgresEventLog } from '@tern/event-log';
import { insertRoute, receiveMessage } from '@tern/inbound';
import { createKeyring } from '@tern/privacy';
import { addSuppression } from '@tern/read-models';
import { createSandboxProvider } from '@tern/sender';
import type { SendingDomains } from '@tern/sending-domains';
import { insertTemplate } from '@tern/templates';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDnsServer, type TestDnsServer } from '../../../../test/support/dns-server.js';
import {
  insertProject,
  JWT_REQUIRED_MESSAGE,
  newResourceId,
  PROJECT_KEY_TENANT_WIDE_MESSAGE,
  PROJECT_KEY_WEBHOOKS_MESSAGE,
  REFERENCE_SENDGRID_KEY,
  TENANT_WIDE_WRITE_SCOPES,
} from '../../src/index.js';
import { testDomains } from '../domains-support.js';
import {
  bearer,
  buildApp,
  closeAll,
  createKey,
  ENCRYPTION_KEY,
  jwtFor,
  openStores,
  type Stores,
  TRACKING_SECRET,
  testTenants,
} from '../support.js';

/**
 * The scope matrix (SPEC §3, §4, part two preamble): every route of the OpenAPI document × every
 * kind of credential, with the exact status SPEC gives. One row per route; a route added without
 * a row fails the first test. Add your row next to the others of its resource.
 *
 * Credentials: none; an API key of the tenant holding every scope but the route's; a key holding
 * only the route's scope (for routes no key may call: every scope); a member JWT; an admin JWT;
 * an admin JWT of another tenant (its resources are not found, its lists are its own); a key bound
 * to a project P holding the route's scope (SPEC §16, issue 24 item 11: it acts only within P —
 * the rows' emails and projects are not P's, so they are not found; tenant-wide resources are
 * read, never changed; webhooks refused).
 */

type Rule =
  /** Analytics: a dashboard JWT of any role; every key 403. */
  | { kind: 'dashboard' }
  /** `/tenants/:id/*`: a JWT of that tenant with role owner or admin; keys, members, other tenants 403. */
  | { kind: 'tenantAdmin' }
  /** `/tenants/:id/*` reads: a JWT of that tenant, any role; keys and other tenants 403. */
  | { kind: 'tenantMember' }
  /** An API key holding `scope`, or a JWT of any role. */
  | { kind: 'scope'; scope: Scope }
  /** A JWT with role owner or admin; no key, whatever its scopes (template writes, SPEC §12). */
  | { kind: 'adminJwt' }
  /** The signed token in the path is the credential: every caller gets the same answer (SPEC §14 unsubscribe, §11 tracking). */
  | { kind: 'token' }
  /** Any API key or JWT of any tenant; each call inside is checked as its own route (`/mcp`, SPEC §28). */
  | { kind: 'anyCredential' };

interface Row {
  rule: Rule;
  /** The success status for an allowed credential. */
  ok: number;
  /** True when the path names one of the tenant's resources: another tenant gets 404. */
  resource?: boolean;
  /**
   * The status for a key bound to a project, where the resource's rule is not the default (a
   * tenant-wide read → `ok`, a tenant-wide write → 403): emails and projects outside its project
   * are not found (404); it may not create a project (403).
   */
  projectKey?: number;
  /** The answer is a stream that never ends (SSE): its status is read from the head, the stream dropped. */
  stream?: boolean;
  /** A fresh request for tenant A (resources it names are created here, so DELETE can succeed each time). */
  request(): Promise<{
    url: string;
    payload?: Record<string, unknown> | Record<string, unknown>[];
    body?: string;
    contentType?: string;
    headers?: Record<string, string>;
  }>;
}

const { clock, A, B } = testTenants('matrix');
let stores: Stores;
let app: FastifyInstance;
let log: PostgresEventLog;
let dns: TestDnsServer;
let domains: SendingDomains;

const fresh = () => randomBytes(6).toString('hex');
const MAILGUN_KEY = 'matrix-mailgun-signing-key-0123';
const unsignedNotification = (provider: string) => ({
  url: `/providers/${provider}`,
  body: JSON.stringify({ Type: 'Notification', event: 'delivered' }),
  contentType: 'application/json',
});
const at = () => clock.now();
const template = async () =>
  (await insertTemplate(
    stores.pool,
    A,
    newResourceId('template'),
    { name: 'n', subject: 's', html: null, text: 't' },
    at(),
  ))!.id;
const projectId = async () => (await insertProject(stores.pool, A, newResourceId('project'), 'p', at())).id;
const suppressed = async () =>
  (
    await addSuppression(
      stores.pool,
      A,
      { email: `${fresh()}@matrix.test`, reason: null, source: 'manual' },
      at(),
    )
  ).suppression.email;

const contactId = async () => {
  const contact = await insertContact(
    stores.pool,
    A,
    { id: newResourceId('contact'), email: `${fresh()}@matrix.test` },
    at(),
  );
  if (contact === 'exists') throw new Error('fresh address exists');
  return contact.id;
};
/** A contact property, a topic and a segment of A (SPEC §27), straight through their owner's stores. */
const propertyName = async () => {
  const name = `p${fresh()}`;
  await createContactStore(stores.pool).insertProperty(A, { name, type: 'string' }, at());
  return name;
};
const topicId = async () =>
  (
    await createTopicStore(stores.pool).insert(
      A,
      { id: newResourceId('topic'), name: 't', default: 'opt_in', public: true },
      at(),
    )
  ).id;
const segmentId = async () =>
  (
    await createSegmentStore(stores.pool).insert(
      A,
      { id: newResourceId('segment'), name: 's', filter: { tag: 'x' } },
      at(),
    )
  ).id;
/** A webhook endpoint of A, created through the API (its secret is sealed like any other). */
const webhookId = async () => {
  const res = await app.inject({
    method: 'POST',
    url: '/webhooks',
    headers: bearer(jwtFor(clock, A)),
    payload: { url: `http://127.0.0.1:9/${fresh()}` },
  });
  if (res.statusCode !== 201) throw new Error(`webhook create: ${res.statusCode} ${res.body}`);
  return (res.json() as { id: string }).id;
};
const mail = () => ({ from: 'a@matrix.test', to: 'delivered@sandbox.test', subject: 's', text: 't' });
/** An email of A, accepted by the real send route (scheduled, so it can still be cancelled). */
const emailId = async () => {
  const res = await app.inject({
    method: 'POST',
    url: '/emails/send',
    headers: bearer(jwtFor(clock, A)),
    payload: { ...mail(), scheduledAt: new Date(at().getTime() + 3_600_000).toISOString() },
  });
  if (res.statusCode !== 202) throw new Error(`send: ${res.statusCode} ${res.body}`);
  return (res.json() as { id: string }).id;
};
/** An email of A whose message the sandbox provider kept. */
const sandboxEmailId = async () => {
  const id = await emailId();
  await createSandboxProvider({ pool: stores.pool }).send(
    {
      messageId: `<${id}@matrix.test>`,
      from: 'a@matrix.test',
      to: 'delivered@sandbox.test',
      cc: [],
      bcc: [],
      replyTo: null,
      subject: 's',
      html: null,
      text: 't',
      headers: {},
    },
    { tenantId: A, emailId: id },
  );
  return id;
};
const trackingToken = (kind: 'open' | 'click') =>
  signTrackingToken(
    TRACKING_SECRET,
    kind === 'open'
      ? { kind, tenantId: A, emailId: `em_${fresh()}` }
      : { kind, tenantId: A, emailId: `em_${fresh()}`, url: 'https://example.com/landing' },
  );
const unsubscribeToken = () =>
  createUnsubscribeToken(TRACKING_SECRET, { tenantId: A, email: `${fresh()}@matrix.test`, source: 'matrix' });

const CAMPAIGN_BODY = { name: 'c', from: 'news@matrix.test', audience: 'matrix', subject: 's', text: 't' };
const campaignId = async () =>
  (
    await insertCampaign(
      stores.pool,
      A,
      {
        id: newResourceId('campaign'),
        name: 'c',
        from: 'news@matrix.test',
        audience: 'matrix',
        templateId: null,
        subject: 's',
        html: null,
        text: 't',
        scheduledAt: null,
      },
      at(),
    )
  ).id;
const SEQUENCE_BODY = {
  name: 's',
  from: 'news@matrix.test',
  steps: [{ delayMinutes: 0, subject: 's', text: 't' }],
};
/** A domain of A (nothing published: a check answers it pending). */
const domainId = async () => {
  const d = await domains.add(A, newResourceId('domain'), `${fresh()}.matrix.test`);
  if (typeof d === 'string') throw new Error(`fresh domain: ${d}`);
  return d.id;
};
/** A message received for A (through the pipeline the MX listener runs), with one attachment. */
const inboundId = async () => {
  const raw = [
    'From: ann@sender.test',
    'To: support@a.in.matrix.test',
    'Subject: matrix',
    `Message-ID: <${fresh()}@sender.test>`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="B"',
    '',
    '--B',
    'Content-Type: text/plain',
    '',
    'hello',
    '--B',
    'Content-Type: application/pdf; name="a.pdf"',
    'Content-Disposition: attachment; filename="a.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from('%PDF-1.4 matrix').toString('base64'),
    '--B--',
    '',
  ].join('\r\n');
  const [id] = await receiveMessage(
    {
      pool: stores.pool,
      keyring: createKeyring({ pool: stores.pool, encryptionKey: ENCRYPTION_KEY }),
      log: { append: async () => {} },
      resolve: (name, type) => dns.resolve(name, type),
    },
    Buffer.from(raw),
    {
      recipients: [{ address: 'support@a.in.matrix.test', tenantId: A }],
      clientIp: '127.0.0.1',
      helo: 'sender.test',
      sender: 'ann@sender.test',
      mta: 'mx.matrix.test',
    },
  );
  return id!;
};
const sequenceId = async () =>
  (await insertSequence(stores.pool, A, newResourceId('sequence'), SEQUENCE_BODY, at())).id;
const AUTOMATION_BODY = { name: 'Flow', trigger: { event: 'contact.created' }, steps: [{ delay: 'PT1H' }] };
const automationId = async () =>
  (await insertAutomation(stores.pool, A, newResourceId('automation'), AUTOMATION_BODY, at())).id;

/** A row of a route gated by `scope` (an API key holding it, or a JWT of any role). */
const scoped = (scope: Scope, ok: number, request: Row['request']): Row => ({
  rule: { kind: 'scope', scope },
  ok,
  request,
});
/** `scoped`, for a route whose path names one of tenant A's resources (another tenant: 404). */
const scopedResource = (scope: Scope, ok: number, request: Row['request']): Row => ({
  ...scoped(scope, ok, request),
  resource: true,
});

/**
 * The rows of a resource's `POST /<path>`, `GET /<path>`, `GET|PATCH|DELETE /<path>/{id}`: reads
 * gated by `read`, writes by `write`; `create` is each POST's body, `update` the PATCH's.
 */
const crudRows = (
  path: string,
  scopes: { read: Scope; write: Scope },
  spec: {
    create: () => Record<string, unknown>;
    idOf: () => Promise<string>;
    update: Record<string, unknown>;
    noDelete?: boolean;
  },
): Record<string, Row> => {
  const one = async () => `/${path}/${await spec.idOf()}`;
  return {
    [`POST /${path}`]: scoped(scopes.write, 201, async () => ({ url: `/${path}`, payload: spec.create() })),
    [`GET /${path}`]: scoped(scopes.read, 200, async () => ({ url: `/${path}` })),
    [`GET /${path}/{id}`]: scopedResource(scopes.read, 200, async () => ({ url: await one() })),
    [`PATCH /${path}/{id}`]: scopedResource(scopes.write, 200, async () => ({
      url: await one(),
      payload: spec.update,
    })),
    ...(spec.noDelete
      ? {}
      : { [`DELETE /${path}/{id}`]: scopedResource(scopes.write, 204, async () => ({ url: await one() })) }),
  };
};

const ROWS: Record<string, Row> = {
  // Analytics (SPEC §6)
  'GET /analytics/summary': {
    rule: { kind: 'dashboard' },
    ok: 200,
    request: async () => ({ url: '/analytics/summary' }),
  },
  'GET /analytics/daily': {
    rule: { kind: 'dashboard' },
    ok: 200,
    request: async () => ({ url: '/analytics/daily' }),
  },
  'GET /analytics/top-templates': {
    rule: { kind: 'dashboard' },
    ok: 200,
    request: async () => ({ url: '/analytics/top-templates' }),
  },
  // Analytics you can slice (SPEC §26)
  'GET /analytics/breakdown': scoped('analytics:read', 200, async () => ({
    url: '/analytics/breakdown?by=provider',
  })),
  'GET /analytics/deliverability': scoped('analytics:read', 200, async () => ({
    url: '/analytics/deliverability',
  })),
  // Logs (SPEC §7)
  'GET /emails/logs': scoped('email:read', 200, async () => ({ url: '/emails/logs' })),
  // The event stream (SPEC §25)
  'GET /events': scoped('events:read', 200, async () => ({ url: '/events?limit=10' })),
  'GET /events/stream': {
    rule: { kind: 'scope', scope: 'events:read' },
    ok: 200,
    stream: true,
    request: async () => ({ url: '/events/stream' }),
  },
  // API keys and settings (SPEC §8, §9)
  'POST /tenants/{id}/api-keys': {
    rule: { kind: 'tenantAdmin' },
    ok: 201,
    request: async () => ({ url: `/tenants/${A}/api-keys`, payload: { name: 'k', scopes: ['email:read'] } }),
  },
  'GET /tenants/{id}/api-keys': {
    rule: { kind: 'tenantAdmin' },
    ok: 200,
    request: async () => ({ url: `/tenants/${A}/api-keys` }),
  },
  'DELETE /tenants/{id}/api-keys/{keyId}': {
    rule: { kind: 'tenantAdmin' },
    ok: 204,
    request: async () => ({
      url: `/tenants/${A}/api-keys/${(await createKey(app, jwtFor(clock, A), A, { scopes: ['email:read'] })).id}`,
    }),
  },
  'GET /tenants/{id}/settings': {
    rule: { kind: 'tenantMember' },
    ok: 200,
    request: async () => ({ url: `/tenants/${A}/settings` }),
  },
  'PUT /tenants/{id}/settings': {
    rule: { kind: 'tenantAdmin' },
    ok: 200,
    request: async () => ({ url: `/tenants/${A}/settings`, payload: { retentionDays: null } }),
  },
  // Templates (SPEC §12)
  'POST /templates': {
    rule: { kind: 'adminJwt' },
    ok: 201,
    request: async () => ({ url: '/templates', payload: { name: 'n', subject: 's', text: 't' } }),
  },
  'GET /templates': scoped('templates:read', 200, async () => ({ url: '/templates' })),
  'GET /templates/{id}': scopedResource('templates:read', 200, async () => ({
    url: `/templates/${await template()}`,
  })),
  'PUT /templates/{id}': {
    rule: { kind: 'adminJwt' },
    ok: 200,
    resource: true,
    request: async () => ({
      url: `/templates/${await template()}`,
      payload: { name: 'n2', subject: 's', html: '<p/>' },
    }),
  },
  'DELETE /templates/{id}': {
    rule: { kind: 'adminJwt' },
    ok: 204,
    resource: true,
    request: async () => ({ url: `/templates/${await template()}` }),
  },
  'POST /templates/{id}/render': scopedResource('templates:read', 200, async () => ({
    url: `/templates/${await template()}/render`,
    payload: { variables: {} },
  })),
  // Suppressions (SPEC §13)
  'GET /suppressions': scoped('suppressions:read', 200, async () => ({ url: '/suppressions' })),
  'POST /suppressions': scoped('suppressions:write', 201, async () => ({
    url: '/suppressions',
    payload: { email: `${fresh()}@matrix.test` },
  })),
  'DELETE /suppressions/{email}': scopedResource('suppressions:write', 204, async () => ({
    url: `/suppressions/${encodeURIComponent(await suppressed())}`,
  })),
  // Projects (SPEC §16)
  'POST /projects': {
    rule: { kind: 'scope', scope: 'projects:write' },
    ok: 201,
    projectKey: 403,
    request: async () => ({ url: '/projects', payload: { name: 'p' } }),
  },
  'GET /projects': scoped('projects:read', 200, async () => ({ url: '/projects' })),
  'GET /projects/{id}': {
    rule: { kind: 'scope', scope: 'projects:read' },
    ok: 200,
    projectKey: 404,
    resource: true,
    request: async () => ({ url: `/projects/${await projectId()}` }),
  },
  'PATCH /projects/{id}': {
    rule: { kind: 'scope', scope: 'projects:write' },
    ok: 200,
    projectKey: 404,
    resource: true,
    request: async () => ({ url: `/projects/${await projectId()}`, payload: { name: 'renamed' } }),
  },
  'DELETE /projects/{id}': {
    rule: { kind: 'scope', scope: 'projects:write' },
    ok: 204,
    projectKey: 404,
    resource: true,
    request: async () => ({ url: `/projects/${await projectId()}` }),
  },
  // Contacts and audiences (SPEC §14)
  ...crudRows(
    'contacts',
    { read: 'contacts:read', write: 'contacts:write' },
    { create: () => ({ email: `${fresh()}@matrix.test` }), idOf: contactId, update: { firstName: 'Ada' } },
  ),
  'POST /contacts/import': {
    rule: { kind: 'scope', scope: 'contacts:write' },
    ok: 200,
    request: async () => ({
      url: '/contacts/import',
      body: `email\n${fresh()}@matrix.test\n`,
      contentType: 'text/csv',
    }),
  },
  'POST /contacts/erase': scoped('contacts:write', 202, async () => ({
    url: '/contacts/erase',
    payload: { email: `${fresh()}@matrix.test` },
  })),
  'GET /contacts/export': scoped('contacts:read', 200, async () => ({ url: '/contacts/export' })),
  'GET /audiences': scoped('contacts:read', 200, async () => ({ url: '/audiences' })),
  // Contact properties, topics and segments (SPEC §27)
  'POST /contact-properties': scoped('contacts:write', 201, async () => ({
    url: '/contact-properties',
    payload: { name: `p${fresh()}`, type: 'number' },
  })),
  'GET /contact-properties': scoped('contacts:read', 200, async () => ({ url: '/contact-properties' })),
  'DELETE /contact-properties/{name}': scopedResource('contacts:write', 204, async () => ({
    url: `/contact-properties/${await propertyName()}`,
  })),
  ...crudRows(
    'topics',
    { read: 'contacts:read', write: 'contacts:write' },
    {
      create: () => ({ name: 'News', default: 'opt_in', public: true }),
      idOf: topicId,
      update: { public: false },
    },
  ),
  ...crudRows(
    'segments',
    { read: 'contacts:read', write: 'contacts:write' },
    {
      create: () => ({ name: 'S', filter: { engagement: 'opened', days: 7 } }),
      idOf: segmentId,
      update: { name: 'Renamed' },
    },
  ),
  'POST /segments/count': scoped('contacts:read', 200, async () => ({
    url: '/segments/count',
    payload: { filter: { audience: 'news' } },
  })),
  'GET /segments/{id}/contacts': scopedResource('contacts:read', 200, async () => ({
    url: `/segments/${await segmentId()}/contacts`,
  })),
  // Sending domains (SPEC §20): keys read with email:send; writes need an owner/admin JWT
  'POST /domains': {
    rule: { kind: 'adminJwt' },
    ok: 201,
    request: async () => ({ url: '/domains', payload: { name: `${fresh()}.matrix.test` } }),
  },
  'GET /domains': scoped('email:send', 200, async () => ({ url: '/domains' })),
  'GET /domains/{id}': scopedResource('email:send', 200, async () => ({
    url: `/domains/${await domainId()}`,
  })),
  'GET /domains/{id}/dmarc': scopedResource('analytics:read', 200, async () => ({
    url: `/domains/${await domainId()}/dmarc?days=7`,
  })),
  'POST /domains/{id}/verify': {
    rule: { kind: 'adminJwt' },
    ok: 200,
    resource: true,
    request: async () => ({ url: `/domains/${await domainId()}/verify` }),
  },
  'DELETE /domains/{id}': {
    rule: { kind: 'adminJwt' },
    ok: 204,
    resource: true,
    request: async () => ({ url: `/domains/${await domainId()}` }),
  },
  'PATCH /domains/{id}': {
    rule: { kind: 'adminJwt' },
    ok: 200,
    resource: true,
    request: async () => ({ url: `/domains/${await domainId()}`, payload: { receiving: true } }),
  },
  // Inbound email (SPEC §24)
  'GET /inbound/domain': scoped('inbound:read', 200, async () => ({ url: '/inbound/domain' })),
  'GET /inbound': scoped('inbound:read', 200, async () => ({ url: '/inbound' })),
  'GET /inbound/{id}': scopedResource('inbound:read', 200, async () => ({
    url: `/inbound/${await inboundId()}`,
  })),
  'GET /inbound/{id}/raw': scopedResource('inbound:read', 200, async () => ({
    url: `/inbound/${await inboundId()}/raw`,
  })),
  'POST /inbound/routes': {
    rule: { kind: 'scope', scope: 'inbound:manage' },
    ok: 201,
    request: async () => ({
      url: '/inbound/routes',
      payload: { match: { recipient: `*@${fresh()}.matrix.test` }, priority: 1, actions: [{ store: true }] },
    }),
  },
  'GET /inbound/routes': scoped('inbound:read', 200, async () => ({ url: '/inbound/routes' })),
  'PUT /inbound/routes/{id}': {
    rule: { kind: 'scope', scope: 'inbound:manage' },
    ok: 200,
    resource: true,
    request: async () => ({
      url: `/inbound/routes/${
        (
          await insertRoute(stores.pool, A, newResourceId('inboundRoute'), {
            match: { recipient: '*@matrix.test' },
            priority: 1,
            actions: [{ drop: true }],
          })
        ).id
      }`,
      payload: { match: { recipient: '*@changed.matrix.test' }, priority: 2, actions: [{ store: true }] },
    }),
  },
  'DELETE /inbound/routes/{id}': {
    rule: { kind: 'scope', scope: 'inbound:manage' },
    ok: 204,
    resource: true,
    request: async () => ({
      url: `/inbound/routes/${
        (
          await insertRoute(stores.pool, A, newResourceId('inboundRoute'), {
            match: { recipient: '*@matrix.test' },
            priority: 1,
            actions: [{ drop: true }],
          })
        ).id
      }`,
    }),
  },
  'GET /inbound/{id}/attachments/{attachmentId}': scopedResource('inbound:read', 200, async () => ({
    url: `/inbound/${await inboundId()}/attachments/att_0`,
  })),
  // Outgoing webhooks (SPEC §17)
  ...crudRows(
    'webhooks',
    { read: 'webhooks:manage', write: 'webhooks:manage' },
    {
      create: () => ({ url: `http://127.0.0.1:9/${fresh()}` }),
      idOf: webhookId,
      update: { description: 'renamed' },
    },
  ),
  'POST /webhooks/{id}/rotate-secret': scopedResource('webhooks:manage', 200, async () => ({
    url: `/webhooks/${await webhookId()}/rotate-secret`,
  })),
  'GET /webhooks/{id}/deliveries': scopedResource('webhooks:manage', 200, async () => ({
    url: `/webhooks/${await webhookId()}/deliveries`,
  })),
  'POST /webhooks/{id}/replay': {
    rule: { kind: 'scope', scope: 'webhooks:manage' },
    ok: 202,
    resource: true,
    request: async () => ({
      url: `/webhooks/${await webhookId()}/replay`,
      payload: { since: '2026-01-01T00:00:00Z' },
    }),
  },
  // Campaigns (SPEC §15)
  ...crudRows(
    'campaigns',
    { read: 'campaigns:read', write: 'campaigns:write' },
    { create: () => CAMPAIGN_BODY, idOf: campaignId, update: { name: 'renamed' } },
  ),
  'GET /campaigns/{id}/daily': scopedResource('campaigns:read', 200, async () => ({
    url: `/campaigns/${await campaignId()}/daily`,
  })),
  'POST /campaigns/{id}/send': scopedResource('campaigns:write', 202, async () => ({
    url: `/campaigns/${await campaignId()}/send`,
  })),
  'POST /campaigns/{id}/cancel': scopedResource('campaigns:write', 200, async () => ({
    url: `/campaigns/${await campaignId()}/cancel`,
  })),
  // Sequences (SPEC §15)
  ...crudRows(
    'sequences',
    { read: 'sequences:read', write: 'sequences:write' },
    { create: () => SEQUENCE_BODY, idOf: sequenceId, update: { name: 'renamed' }, noDelete: true },
  ),
  'GET /sequences/{id}/enrollments': scopedResource('sequences:read', 200, async () => ({
    url: `/sequences/${await sequenceId()}/enrollments`,
  })),
  'POST /sequences/{id}/enrollments': {
    rule: { kind: 'scope', scope: 'sequences:write' },
    ok: 201,
    resource: true,
    request: async () => {
      const email = `${fresh()}@matrix.test`;
      await insertContact(stores.pool, A, { id: newResourceId('contact'), email }, at());
      return { url: `/sequences/${await sequenceId()}/enrollments`, payload: { email } };
    },
  },
  'DELETE /sequences/{id}/enrollments/{enrollmentId}': {
    rule: { kind: 'scope', scope: 'sequences:write' },
    ok: 204,
    resource: true,
    request: async () => {
      const email = `${fresh()}@matrix.test`;
      await insertContact(stores.pool, A, { id: newResourceId('contact'), email }, at());
      const seq = await sequenceId();
      const outcome = await enroll(stores.pool, A, seq, `enr_${fresh()}`, email, at());
      if (outcome.kind !== 'ok') throw new Error(outcome.kind);
      return { url: `/sequences/${seq}/enrollments/${outcome.enrollment.id}` };
    },
  },
  // Automations (SPEC §27)
  ...crudRows(
    'automations',
    { read: 'automations:read', write: 'automations:write' },
    { create: () => AUTOMATION_BODY, idOf: automationId, update: { name: 'renamed' } },
  ),
  'GET /automations/{id}/runs': scopedResource('automations:read', 200, async () => ({
    url: `/automations/${await automationId()}/runs`,
  })),
  'POST /events/track': {
    rule: { kind: 'scope', scope: 'events:write' },
    ok: 202,
    // The contact it names is A's: another tenant's credential finds no such contact.
    resource: true,
    request: async () => {
      const email = `${fresh()}@matrix.test`;
      await insertContact(stores.pool, A, { id: newResourceId('contact'), email }, at());
      return { url: '/events/track', payload: { email, name: 'matrix.event' } };
    },
  },
  // Sending (SPEC §11)
  'POST /emails/send': scoped('email:send', 202, async () => ({ url: '/emails/send', payload: mail() })),
  'POST /emails/batch': scoped('email:send', 202, async () => ({
    url: '/emails/batch',
    payload: [mail(), mail()],
  })),
  'GET /emails/{id}': {
    rule: { kind: 'scope', scope: 'email:read' },
    ok: 200,
    projectKey: 404,
    resource: true,
    request: async () => ({ url: `/emails/${await emailId()}` }),
  },
  'GET /emails/{id}/content': {
    rule: { kind: 'scope', scope: 'email:read' },
    ok: 200,
    projectKey: 404,
    resource: true,
    request: async () => ({ url: `/emails/${await sandboxEmailId()}/content` }),
  },
  'PATCH /emails/{id}': {
    rule: { kind: 'scope', scope: 'email:send' },
    ok: 200,
    // An email outside the key's project does not exist for it, as on every /emails/{id} route.
    projectKey: 404,
    resource: true,
    request: async () => ({
      url: `/emails/${await emailId()}`,
      payload: { scheduledAt: new Date(at().getTime() + 7_200_000).toISOString() },
    }),
  },
  'POST /emails/{id}/cancel': {
    rule: { kind: 'scope', scope: 'email:read' },
    ok: 200,
    projectKey: 404,
    resource: true,
    request: async () => ({ url: `/emails/${await emailId()}/cancel` }),
  },
  // Tracking links (SPEC §11): the token is the credential
  'GET /t/o/{token}': {
    rule: { kind: 'token' },
    ok: 200,
    request: async () => ({ url: `/t/o/${trackingToken('open')}` }),
  },
  'GET /t/c/{token}': {
    rule: { kind: 'token' },
    ok: 302,
    request: async () => ({ url: `/t/c/${trackingToken('click')}` }),
  },
  // Provider notifications (SPEC §21): the provider's signature is the credential, whatever else is
  // sent. Unsigned → 401 with any of the matrix's credentials; Mailgun's signature is in the body.
  'POST /providers/ses': {
    rule: { kind: 'token' },
    ok: 401,
    request: async () => unsignedNotification('ses'),
  },
  'POST /providers/sendgrid': {
    rule: { kind: 'token' },
    ok: 401,
    request: async () => unsignedNotification('sendgrid'),
  },
  'POST /providers/postmark': {
    rule: { kind: 'token' },
    ok: 401,
    request: async () => unsignedNotification('postmark'),
  },
  'POST /providers/resend': {
    rule: { kind: 'token' },
    ok: 401,
    request: async () => unsignedNotification('resend'),
  },
  'POST /providers/mailgun': {
    rule: { kind: 'token' },
    ok: 200,
    request: async () => {
      const timestamp = String(Math.floor(at().getTime() / 1000));
      const token = fresh();
      const signature = createHmac('sha256', MAILGUN_KEY)
        .update(timestamp + token)
        .digest('hex');
      return {
        url: '/providers/mailgun',
        body: JSON.stringify({
          signature: { timestamp, token, signature },
          'event-data': { id: fresh(), event: 'delivered' },
        }),
        contentType: 'application/json',
      };
    },
  },
  // The MCP server (SPEC §28): any credential opens it; each tool call is its route's
  'POST /mcp': {
    rule: { kind: 'anyCredential' },
    ok: 200,
    request: async () => ({
      url: '/mcp',
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      contentType: 'application/json',
      headers: { accept: 'application/json, text/event-stream' },
    }),
  },
  'GET /mcp': { rule: { kind: 'anyCredential' }, ok: 405, request: async () => ({ url: '/mcp' }) },
  'DELETE /mcp': { rule: { kind: 'anyCredential' }, ok: 405, request: async () => ({ url: '/mcp' }) },
  // Unsubscribe links (SPEC §14): the token is the credential
  'GET /u/{token}': {
    rule: { kind: 'token' },
    ok: 200,
    request: async () => ({ url: `/u/${unsubscribeToken()}` }),
  },
  'POST /u/{token}/preferences': {
    rule: { kind: 'token' },
    ok: 200,
    request: async () => ({
      url: `/u/${unsubscribeToken()}/preferences`,
      body: 'topic=top_x',
      contentType: 'application/x-www-form-urlencoded',
    }),
  },
  'POST /u/{token}': {
    rule: { kind: 'token' },
    ok: 200,
    request: async () => ({
      url: `/u/${unsubscribeToken()}`,
      body: 'List-Unsubscribe=One-Click',
      contentType: 'application/x-www-form-urlencoded',
    }),
  },
};

type CredentialKind = 'none' | 'keyWithout' | 'keyWith' | 'member' | 'admin' | 'otherTenant' | 'projectKey';
const CREDENTIALS: CredentialKind[] = [
  'none',
  'keyWithout',
  'keyWith',
  'member',
  'admin',
  'otherTenant',
  'projectKey',
];

/** The status and (for 403) message SPEC gives to one credential on one route. */
function expected(row: Row, credential: CredentialKind): { status: number; message?: string } {
  const { rule } = row;
  if (rule.kind === 'token') return { status: row.ok };
  if (rule.kind === 'anyCredential') return { status: credential === 'none' ? 401 : row.ok };
  switch (credential) {
    case 'none':
      return { status: 401 };
    case 'keyWithout':
      return rule.kind === 'scope' || rule.kind === 'adminJwt'
        ? { status: 403, message: MISSING_SCOPE_MESSAGE }
        : { status: 403, message: JWT_REQUIRED_MESSAGE };
    case 'keyWith':
      if (rule.kind === 'scope') return { status: row.ok };
      return rule.kind === 'adminJwt'
        ? { status: 403, message: MISSING_SCOPE_MESSAGE }
        : { status: 403, message: JWT_REQUIRED_MESSAGE };
    case 'member':
      return rule.kind === 'tenantAdmin' || rule.kind === 'adminJwt' ? { status: 403 } : { status: row.ok };
    case 'admin':
      return { status: row.ok };
    case 'otherTenant':
      if (rule.kind === 'tenantAdmin' || rule.kind === 'tenantMember') return { status: 403 };
      return row.resource ? { status: 404 } : { status: row.ok };
    case 'projectKey':
      if (rule.kind !== 'scope') return expected(row, 'keyWith');
      if (rule.scope === 'webhooks:manage') return { status: 403, message: PROJECT_KEY_WEBHOOKS_MESSAGE };
      if (TENANT_WIDE_WRITE_SCOPES.includes(rule.scope))
        return { status: 403, message: PROJECT_KEY_TENANT_WIDE_MESSAGE };
      return { status: row.projectKey ?? row.ok };
  }
}

const keys = new Map<string, string>();
let boundProject: string | undefined;
/** A key of A holding exactly `scopes` (created once), bound to the matrix's project when `bound`. */
async function keyWith(scopes: readonly Scope[], bound = false): Promise<string> {
  const name = `${scopes.join(',')}${bound ? ' bound' : ''}`;
  let key = keys.get(name);
  if (key === undefined) {
    if (bound) boundProject ??= await projectId();
    key = (
      await createKey(app, jwtFor(clock, A), A, {
        scopes: [...scopes],
        ...(bound ? { projectId: boundProject } : {}),
      })
    ).key;
    keys.set(name, key);
  }
  return key;
}

async function headersFor(row: Row, credential: CredentialKind): Promise<Record<string, string>> {
  const scope = row.rule.kind === 'scope' ? row.rule.scope : null;
  switch (credential) {
    case 'none':
      return {};
    case 'keyWithout':
      return { 'x-api-key': await keyWith(SCOPES.filter((s) => s !== scope)) };
    case 'keyWith':
      return bearer(await keyWith(scope === null ? SCOPES : [scope]));
    case 'member':
      return bearer(jwtFor(clock, A, 'member'));
    case 'admin':
      return bearer(jwtFor(clock, A, 'admin'));
    case 'otherTenant':
      return bearer(jwtFor(clock, B, 'admin'));
    case 'projectKey':
      return bearer(await keyWith(scope === null ? SCOPES : [scope], true));
  }
}

let documented: string[] = [];

beforeAll(async () => {
  stores = await openStores();
  log = createPostgresEventLog({ pool: stores.pool });
  await log.ensureSchema();
  dns = await startTestDnsServer();
  const stream = createEventStream(log);
  domains = testDomains(stores.pool, stream, dns, clock.now);
  app = await buildApp(stores, clock, {
    limits: { rateLimit: false },
    features: {
      inboundDomain: 'in.matrix.test',
      sending: { log: stream },
      domains: { domains },
      providers: {
        sesTopicArns: ['arn:aws:sns:eu-west-1:123456789012:tern-ses'],
        sendgridPublicKey: REFERENCE_SENDGRID_KEY,
        postmark: { user: 'postmark', password: 'matrix-postmark-password' },
        mailgunSigningKey: MAILGUN_KEY,
        resendSecret: 'whsec_bWF0cml4LXJlc2VuZC1zZWNyZXQtMDEyMzQ1',
      },
    },
  });
  // biome-ignore lint/suspicious/noExplicitAny: the parsed OpenAPI document
  const doc: any = (await app.inject('/docs/json')).json();
  documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
    Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
  );
});

afterAll(() => closeAll(app, log, dns, stores));

/** A GET whose 200 is an endless stream: the status and, for an error, the whole (short) body. */
async function streamHead(url: string, headers: Record<string, string>) {
  const abort = new AbortController();
  const res = await app.inject({ method: 'GET', url, headers, payloadAsStream: true, signal: abort.signal });
  let body = '';
  if (res.statusCode >= 400) for await (const chunk of res.stream()) body += String(chunk);
  else abort.abort();
  res.stream().on('error', () => undefined);
  return { statusCode: res.statusCode, body, json: () => JSON.parse(body) };
}

describe('scope matrix', () => {
  it('has exactly one row per route of the OpenAPI document', () => {
    expect(documented.length).toBeGreaterThan(0);
    expect([...documented].sort()).toEqual(Object.keys(ROWS).sort());
  });

  for (const [route, row] of Object.entries(ROWS)) {
    const [method] = route.split(' ') as [string];
    it.each(CREDENTIALS)(`${route} × %s`, async (credential) => {
      const { url, payload, body, contentType, headers: extra } = await row.request();
      const want = expected(row, credential);
      const headers = { ...(await headersFor(row, credential)), ...extra };
      if (contentType !== undefined) headers['content-type'] = contentType;
      const res = row.stream
        ? await streamHead(url, headers)
        : await app.inject({
            method: method as 'GET',
            url,
            headers,
            ...(payload === undefined ? {} : { payload }),
            ...(body === undefined ? {} : { body }),
          });
      expect(res.statusCode, `${route} as ${credential}: ${res.body}`).toBe(want.status);
      if (want.status >= 400) {
        expect(res.json()).toMatchObject({
          statusCode: want.status,
          error: expect.any(String),
          message: expect.any(String),
        });
      }
      if (want.message !== undefined) expect(res.json().message).toBe(want.message);
    });
  }
});
