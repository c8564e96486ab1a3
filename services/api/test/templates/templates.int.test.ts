import { getTemplate } from '@tern/templates';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, createKey, eventsOf, jwtFor, NOW, project, testApp } from '../support.js';

// SPEC §12 on the real app, real Postgres and chDB: one block per status per route.

const file = testApp('tpl');
const { clock, run, A, B } = file;

const admin = () => bearer(jwtFor(clock, A, 'admin'));
const member = () => bearer(jwtFor(clock, A, 'member'));
let readKey: string;
let otherKey: string;

const body = {
  name: 'Welcome',
  subject: 'Welcome, {{firstName}}',
  html: '<p>Hi {{firstName}}</p>',
  text: 'Hi {{firstName}}',
};

async function create(payload: Record<string, unknown> = body, headers: Record<string, string> = admin()) {
  return file.app.inject({ method: 'POST', url: '/templates', headers, payload });
}

beforeAll(async () => {
  readKey = (await createKey(file.app, jwtFor(clock, A), A, { scopes: ['templates:read'] })).key;
  otherKey = (await createKey(file.app, jwtFor(clock, A), A, { scopes: ['email:read'] })).key;
});

describe('POST /templates', () => {
  it('201: an admin JWT creates it with a tpl_ id', async () => {
    const res = await create();
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toEqual({
      id: expect.stringMatching(/^tpl_[A-Za-z0-9]{20,}$/),
      ...body,
      createdAt: NOW,
      updatedAt: NOW,
    });
  });

  it('201: an owner JWT with its own id, text only', async () => {
    const res = await create(
      { id: `own-${run}`, name: 'Receipt', subject: 'Receipt', text: 'Paid' },
      bearer(jwtFor(clock, A, 'owner')),
    );
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ id: `own-${run}`, html: null, text: 'Paid' });
  });

  it('409: an id the tenant already uses; another tenant may use it', async () => {
    await create({ id: `dup-${run}`, ...body });
    const again = await create({ id: `dup-${run}`, ...body, name: 'Other' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ statusCode: 409, error: 'Conflict' });
    const elsewhere = await create({ id: `dup-${run}`, ...body }, bearer(jwtFor(clock, B, 'admin')));
    expect(elsewhere.statusCode).toBe(201);
  });

  it.each([
    [{ ...body, name: '' }, 'body.name'],
    [{ ...body, name: 'x'.repeat(101) }, 'body.name'],
    [{ ...body, subject: 's'.repeat(999) }, 'body.subject'],
    [{ name: 'n', subject: 's' }, 'html or text is required'],
    [{ ...body, html: '{{#open}} never closed' }, 'body.html'],
    [{ ...body, text: 'Hi {{name' }, 'body.text'],
    [{ ...body, color: 'red' }, 'color'],
    [{ ...body, id: 'has space' }, 'body.id'],
  ])('400 names the field: %j', async (payload, field) => {
    const res = await create(payload as Record<string, unknown>);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().message).toContain(field);
  });

  it('403: any API key, even one with templates:read; a member JWT', async () => {
    for (const key of [readKey, otherKey]) {
      const res = await create(body, { 'x-api-key': key });
      expect(res.statusCode).toBe(403);
      expect(res.json().message).toBe('Missing required API key scope');
    }
    const res = await create(body, member());
    expect(res.statusCode).toBe(403);
    expect(res.json().message).toMatch(/role/);
  });

  it('401: no credential', async () => {
    expect((await create(body, {})).statusCode).toBe(401);
  });
});

describe('GET /templates and /templates/:id', () => {
  let id: string;
  beforeAll(async () => {
    id = (await create({ ...body, name: 'Listed' })).json().id;
  });

  it('200: a templates:read key and any JWT read it; the list has no content', async () => {
    for (const headers of [{ 'x-api-key': readKey }, member(), admin()]) {
      const one = await file.app.inject({ url: `/templates/${id}`, headers });
      expect(one.statusCode).toBe(200);
      expect(one.json()).toMatchObject({ id, name: 'Listed', html: body.html, text: body.text });
      const list = await file.app.inject({ url: '/templates?limit=100', headers });
      expect(list.statusCode).toBe(200);
      const entry = list.json().data.find((t: { id: string }) => t.id === id);
      expect(entry).toEqual({ id, name: 'Listed', subject: body.subject, createdAt: NOW, updatedAt: NOW });
    }
  });

  it('pages newest first with meta like the logs', async () => {
    const tenant = `tpl-page-${run}`;
    const h = bearer(jwtFor(clock, tenant, 'admin'));
    for (let i = 0; i < 3; i++) {
      clock.advance(1000);
      await create({ id: `p${i}`, ...body }, h);
    }
    clock.set(NOW);
    const page1 = (await file.app.inject({ url: '/templates?limit=2', headers: h })).json();
    expect(page1.data.map((t: { id: string }) => t.id)).toEqual(['p2', 'p1']);
    expect(page1.meta).toEqual({ page: 1, limit: 2, total: 3, totalPages: 2 });
    const page2 = (await file.app.inject({ url: '/templates?limit=2&page=2', headers: h })).json();
    expect(page2.data.map((t: { id: string }) => t.id)).toEqual(['p0']);
    const past = (await file.app.inject({ url: '/templates?page=99999999999', headers: h })).json();
    expect(past.data).toEqual([]);
  });

  it('404: unknown id, and another tenant’s template (never its data)', async () => {
    expect((await file.app.inject({ url: '/templates/tpl_nope', headers: admin() })).statusCode).toBe(404);
    const res = await file.app.inject({ url: `/templates/${id}`, headers: bearer(jwtFor(clock, B)) });
    expect(res.statusCode).toBe(404);
    expect(res.body).not.toContain('Listed');
  });

  it('403: a key without templates:read; 400: a bad limit', async () => {
    const res = await file.app.inject({ url: '/templates', headers: { 'x-api-key': otherKey } });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({
      message: 'Missing required API key scope',
      missingScope: 'templates:read',
    });
    expect((await file.app.inject({ url: '/templates?limit=101', headers: admin() })).statusCode).toBe(400);
  });
});

describe('PUT and DELETE /templates/:id', () => {
  it('200: replaces everything (an absent part becomes null); 404 for another tenant', async () => {
    const id = (await create()).json().id;
    clock.advance(60_000);
    const res = await file.app.inject({
      method: 'PUT',
      url: `/templates/${id}`,
      headers: admin(),
      payload: { name: 'Welcome v2', subject: 'Hello {{firstName}}', text: 'v2' },
    });
    clock.set(NOW);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      id,
      name: 'Welcome v2',
      subject: 'Hello {{firstName}}',
      html: null,
      text: 'v2',
      createdAt: NOW,
      updatedAt: '2026-06-15T12:01:00.000Z',
    });
    const other = await file.app.inject({
      method: 'PUT',
      url: `/templates/${id}`,
      headers: bearer(jwtFor(clock, B, 'admin')),
      payload: { name: 'stolen', subject: 's', text: 't' },
    });
    expect(other.statusCode).toBe(404);
    expect((await getTemplate(file.stores.pool, A, id))?.name).toBe('Welcome v2');
  });

  it('403 for keys and members, 400 for a bad body', async () => {
    const id = (await create()).json().id;
    const put = (headers: Record<string, string>, payload: unknown = body) =>
      file.app.inject({ method: 'PUT', url: `/templates/${id}`, headers, payload: payload as object });
    expect((await put({ 'x-api-key': readKey })).statusCode).toBe(403);
    expect((await put(member())).statusCode).toBe(403);
    expect((await put(admin(), { ...body, id: 'x' })).statusCode).toBe(400);
  });

  it('204 then 404; a key or a member cannot delete', async () => {
    const id = (await create()).json().id;
    const del = (headers: Record<string, string>) =>
      file.app.inject({ method: 'DELETE', url: `/templates/${id}`, headers });
    expect((await del({ 'x-api-key': readKey })).statusCode).toBe(403);
    expect((await del(member())).statusCode).toBe(403);
    expect((await del(bearer(jwtFor(clock, B, 'admin')))).statusCode).toBe(404);
    expect((await del(admin())).statusCode).toBe(204);
    expect((await del(admin())).statusCode).toBe(404);
    expect((await file.app.inject({ url: `/templates/${id}`, headers: admin() })).statusCode).toBe(404);
  });
});

describe('POST /templates/:id/render', () => {
  it('200: renders like the sender (escaped html, plain subject/text, missing → empty)', async () => {
    const id = (
      await create({
        name: 'R',
        subject: 'Hi {{name}} {{missing}}!',
        html: '<p>{{name}}</p>',
        text: '{{name}}',
      })
    ).json().id;
    const res = await file.app.inject({
      method: 'POST',
      url: `/templates/${id}/render`,
      headers: { 'x-api-key': readKey },
      payload: { variables: { name: 'Tom & <Jerry>' } },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      subject: 'Hi Tom & <Jerry> !',
      html: '<p>Tom &amp; &lt;Jerry&gt;</p>',
      text: 'Tom & <Jerry>',
    });
  });

  it('400 bad variables, 404 another tenant, 403 key without the scope', async () => {
    const id = (await create()).json().id;
    const render = (headers: Record<string, string>, payload: unknown = {}) =>
      file.app.inject({
        method: 'POST',
        url: `/templates/${id}/render`,
        headers,
        payload: payload as object,
      });
    expect((await render(admin(), { variables: [1] })).statusCode).toBe(400);
    expect((await render(bearer(jwtFor(clock, B)))).statusCode).toBe(404);
    expect((await render({ 'x-api-key': otherKey })).statusCode).toBe(403);
    expect((await render(member())).json().subject).toBe('Welcome, ');
  });
});

describe('top-templates (SPEC §6, §12)', () => {
  it('shows the current name and subject at once, and keeps a deleted template’s figures', async () => {
    const tenant = `tpl-top-${run}`;
    const h = bearer(jwtFor(clock, tenant, 'admin'));
    const id = (await create({ ...body, name: 'First name' }, h)).json().id;
    const events = eventsOf(tenant, `em-${run}`, [
      {
        type: 'email.queued',
        occurredAt: '2026-06-15T10:00:00Z',
        data: { toEmail: 'a@x.test', subject: 's', templateId: id },
      },
      { type: 'email.sent', occurredAt: '2026-06-15T10:00:01Z', data: { provider: 'p', messageId: 'm' } },
    ]);
    await project(file.stores, events);
    const top = async () =>
      (await file.app.inject({ url: '/analytics/top-templates?days=1', headers: h })).json().top;
    expect(await top()).toEqual([
      { id, name: 'First name', subject: body.subject, sent: 1, opened: 0, clicked: 0 },
    ]);
    await file.app.inject({
      method: 'PUT',
      url: `/templates/${id}`,
      headers: h,
      payload: { ...body, name: 'Renamed', subject: 'New' },
    });
    expect(await top()).toEqual([{ id, name: 'Renamed', subject: 'New', sent: 1, opened: 0, clicked: 0 }]);
    await file.app.inject({ method: 'DELETE', url: `/templates/${id}`, headers: h });
    expect(await top()).toEqual([{ id, name: id, subject: '', sent: 1, opened: 0, clicked: 0 }]);
  });
});
