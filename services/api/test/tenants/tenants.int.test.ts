import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cohort,
  eventsFor,
  expectedDaily,
  expectedTop,
  expectedTotals,
  type GeneratedEmail,
  generateEmails,
  windowOf,
} from '../datasets.js';
import {
  bearer,
  closeAll,
  createKey,
  DEFAULT_RETENTION_DAYS,
  dayStart,
  eventsOf,
  jwtFor,
  NOW,
  openApp,
  prng,
  project,
  type Stores,
  testTenants,
} from '../support.js';

describe('projects', () => {
  // SPEC §16: project CRUD, projectId on events, the logs and analytics narrowed to a project
  // (checked against figures computed straight from the generated emails), and project-bound keys.

  const { clock, run, A, B } = testTenants('prj');
  const TEMPLATES = ['tpl-1', 'tpl-2', 'tpl-3'];

  let stores: Stores;
  let app: FastifyInstance;
  let owner: string;
  let p1: string;
  let p2: string;
  let emails: GeneratedEmail[];

  const h = (token = owner) => bearer(token);
  const create = (name: string, headers: Record<string, string> = h()) =>
    app.inject({ method: 'POST', url: '/projects', headers, payload: { name } });

  beforeAll(async () => {
    ({ stores, app } = await openApp(clock));
    owner = jwtFor(clock, A);
    p1 = (await create('Marketing')).json().id;
    p2 = (await create('Transactional')).json().id;
    // Every email in p1, p2 or no project, deterministically.
    const random = prng(11);
    emails = generateEmails({
      tenantId: A,
      now: NOW,
      count: 300,
      seed: 5,
      spanDays: 40,
      templates: TEMPLATES,
    }).map((e) => {
      const r = random();
      return { ...e, projectId: r < 0.4 ? p1 : r < 0.75 ? p2 : null };
    });
    // B uses the same project ids in its events: none of it may show up for A.
    const other = generateEmails({
      tenantId: B,
      now: NOW,
      count: 50,
      seed: 6,
      spanDays: 40,
      templates: TEMPLATES,
    }).map((e) => ({ ...e, projectId: p1 }));
    await project(stores, eventsFor([...emails, ...other], 7));
  });

  afterAll(() => closeAll(app, stores));

  describe('project CRUD', () => {
    it('201 prj_ id; GET one and the list; PATCH renames; 404 for another tenant', async () => {
      const res = await create('Docs');
      expect(res.statusCode, res.body).toBe(201);
      const created = res.json();
      expect(created).toEqual({
        id: expect.stringMatching(/^prj_[A-Za-z0-9]{20,}$/),
        name: 'Docs',
        createdAt: NOW,
        updatedAt: NOW,
      });
      expect((await app.inject({ url: `/projects/${created.id}`, headers: h() })).json()).toEqual(created);
      const listed = (await app.inject({ url: '/projects', headers: h() })).json();
      expect(listed.meta.total).toBe(3);
      expect(listed.data.map((p: { id: string }) => p.id)).toEqual(
        expect.arrayContaining([p1, p2, created.id]),
      );
      const patched = await app.inject({
        method: 'PATCH',
        url: `/projects/${created.id}`,
        headers: h(),
        payload: { name: 'Docs 2' },
      });
      expect(patched.statusCode).toBe(200);
      expect(patched.json().name).toBe('Docs 2');
      const otherTenant = bearer(jwtFor(clock, B));
      expect((await app.inject({ url: `/projects/${created.id}`, headers: otherTenant })).statusCode).toBe(
        404,
      );
      expect(
        (
          await app.inject({
            method: 'PATCH',
            url: `/projects/${created.id}`,
            headers: otherTenant,
            payload: { name: 'x' },
          })
        ).statusCode,
      ).toBe(404);
      expect(
        (await app.inject({ method: 'DELETE', url: `/projects/${created.id}`, headers: otherTenant }))
          .statusCode,
      ).toBe(404);
      expect((await app.inject({ url: '/projects', headers: otherTenant })).json().data).toEqual([]);
    });

    it('400 names the field; 403 for keys lacking the scope', async () => {
      expect((await create('')).json().message).toContain('body.name');
      expect(
        (await app.inject({ method: 'PATCH', url: `/projects/${p1}`, headers: h(), payload: { nom: 'x' } }))
          .statusCode,
      ).toBe(400);
      const readKey = (await createKey(app, owner, A, { scopes: ['projects:read'] })).key;
      const res = await create('Nope', { 'x-api-key': readKey });
      expect(res.statusCode).toBe(403);
      expect(res.json().missingScope).toBe('projects:write');
      expect((await app.inject({ url: '/projects', headers: { 'x-api-key': readKey } })).statusCode).toBe(
        200,
      );
    });

    it('DELETE: 409 while the project has emails, 204 without, then 404', async () => {
      const res = await app.inject({ method: 'DELETE', url: `/projects/${p1}`, headers: h() });
      expect(res.statusCode).toBe(409);
      expect(res.json().message).toContain(p1);
      const empty = (await create('Empty')).json().id;
      expect(
        (await app.inject({ method: 'DELETE', url: `/projects/${empty}`, headers: h() })).statusCode,
      ).toBe(204);
      expect(
        (await app.inject({ method: 'DELETE', url: `/projects/${empty}`, headers: h() })).statusCode,
      ).toBe(404);
    });
  });

  describe('GET /emails/logs?projectId=', () => {
    const ids = async (url: string, headers: Record<string, string>) => {
      const out: string[] = [];
      for (let page = 1; ; page++) {
        const res = await app.inject({
          url: `${url}${url.includes('?') ? '&' : '?'}limit=100&page=${page}`,
          headers,
        });
        expect(res.statusCode, res.body).toBe(200);
        out.push(...res.json().data.map((e: { id: string }) => e.id));
        if (page >= res.json().meta.totalPages) return { ids: out, total: res.json().meta.total };
      }
    };
    const visible = (projectId: string | null) =>
      emails
        // Never an entry older than the retention cut-off (00:00 UTC of today − 90 days).
        .filter((e) => e.createdAt.getTime() >= dayStart(NOW, -DEFAULT_RETENTION_DAYS).getTime())
        .filter((e) => projectId === null || e.projectId === projectId)
        .sort(
          (x, y) => y.createdAt.getTime() - x.createdAt.getTime() || (x.id < y.id ? 1 : x.id > y.id ? -1 : 0),
        )
        .map((e) => e.id);

    it('narrows to the project, in log order, with its own total', async () => {
      for (const p of [p1, p2]) {
        const got = await ids(`/emails/logs?projectId=${p}`, h());
        expect(got.ids).toEqual(visible(p));
        expect(got.total).toBe(visible(p).length);
        expect(got.total).toBeGreaterThan(50);
      }
      expect((await ids('/emails/logs?projectId=prj_unknown', h())).ids).toEqual([]);
      expect((await ids('/emails/logs', h())).ids).toEqual(visible(null));
    });

    it('400 for a malformed projectId', async () => {
      const res = await app.inject({ url: '/emails/logs?projectId=has%20space', headers: h() });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toContain('projectId');
    });

    it('uses the project index', async () => {
      const { rows } = await stores.pool.query(
        `EXPLAIN SELECT id FROM email_logs WHERE tenant_id = $1 AND created_at IS NOT NULL AND created_at >= $2
        AND project_id = $3 ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT 20`,
        [A, '2026-01-01', p1],
      );
      // Postgres may still prefer a scan on this small table; forbid that to see the index is usable.
      await stores.pool.query('SET enable_seqscan = off');
      const forced = await stores.pool.query(
        `EXPLAIN SELECT count(*) FROM email_logs WHERE tenant_id = $1 AND created_at IS NOT NULL AND created_at >= $2
        AND project_id = $3`,
        [A, '2026-01-01', p1],
      );
      await stores.pool.query('RESET enable_seqscan');
      expect(rows.length).toBeGreaterThan(0);
      // The log is partitioned by day (migration 0560): the index is the partition's, made from
      // email_logs_tenant_project_created_idx (the DEFAULT's keeps that name after `_default`).
      expect(JSON.stringify(forced.rows)).toMatch(/email_logs_(default|d\d{8})_tenant_(id_)?project_/);
    });
  });

  describe('/analytics/*?projectId= (exact, from the projection)', () => {
    const get = async (url: string) => {
      const res = await app.inject({ url, headers: h() });
      expect(res.statusCode, res.body).toBe(200);
      return res.json();
    };
    const names = new Map<string, { name: string; subject: string }>();

    it.each([1, 7, 30])(
      'days=%i: summary, daily and top-templates of each project match an independent computation',
      async (days) => {
        const w = windowOf(NOW, days, DEFAULT_RETENTION_DAYS);
        for (const p of [p1, p2]) {
          const mine = cohort(
            emails.filter((e) => e.projectId === p),
            w,
          );
          expect((await get(`/analytics/summary?days=${days}&projectId=${p}`)).totals).toEqual(
            expectedTotals(mine),
          );
          expect((await get(`/analytics/daily?days=${days}&projectId=${p}`)).daily).toEqual(
            expectedDaily(
              emails.filter((e) => e.projectId === p),
              NOW,
              days,
              w,
            ),
          );
          expect((await get(`/analytics/top-templates?days=${days}&projectId=${p}`)).top).toEqual(
            expectedTop(mine, names),
          );
        }
        // Without the filter: every email, projects or not.
        expect((await get(`/analytics/summary?days=${days}`)).totals).toEqual(
          expectedTotals(cohort(emails, w)),
        );
      },
    );

    it('an unknown project has zero figures; a malformed one is a 400', async () => {
      expect((await get('/analytics/summary?projectId=prj_none')).totals.total).toBe(0);
      const res = await app.inject({ url: '/analytics/daily?projectId=a%2Fb', headers: h() });
      expect(res.statusCode).toBe(400);
    });

    it('an earlier email.queued naming another project moves the email between projects', async () => {
      const tenant = `prj-move-${run}`;
      const t = jwtFor(clock, tenant);
      const total = async (p: string) =>
        (await app.inject({ url: `/analytics/summary?days=1&projectId=${p}`, headers: bearer(t) })).json()
          .totals.total;
      const [late, early] = eventsOf(tenant, 'e1', [
        {
          type: 'email.queued',
          occurredAt: '2026-06-15T11:00:00Z',
          data: { toEmail: 'a@x.test', subject: 's', projectId: 'prj_late' },
        },
        {
          type: 'email.queued',
          occurredAt: '2026-06-15T10:00:00Z',
          data: { toEmail: 'a@x.test', subject: 's', projectId: 'prj_early' },
        },
      ]);
      await project(stores, [late!]);
      expect([await total('prj_late'), await total('prj_early')]).toEqual([1, 0]);
      await project(stores, [early!]);
      expect([await total('prj_late'), await total('prj_early')]).toEqual([0, 1]);
      await project(stores, [late!, early!]); // replayed: nothing moves
      expect([await total('prj_late'), await total('prj_early')]).toEqual([0, 1]);
    });
  });

  describe('project-bound API keys', () => {
    let bound: string;
    beforeAll(async () => {
      const res = await app.inject({
        method: 'POST',
        url: `/tenants/${A}/api-keys`,
        headers: h(),
        payload: {
          name: 'p1 only',
          scopes: ['email:read', 'projects:read', 'projects:write'],
          projectId: p1,
        },
      });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json().projectId).toBe(p1);
      bound = res.json().key;
    });

    it('the key list shows the binding', async () => {
      const keys = (await app.inject({ url: `/tenants/${A}/api-keys`, headers: h() })).json().data;
      expect(keys.find((k: { name: string }) => k.name === 'p1 only').projectId).toBe(p1);
    });

    it('400: a project the tenant does not have', async () => {
      for (const projectId of ['prj_unknown', p1]) {
        const res = await app.inject({
          method: 'POST',
          url: `/tenants/${B}/api-keys`,
          headers: bearer(jwtFor(clock, B)),
          payload: { name: 'x', scopes: ['email:read'], projectId },
        });
        expect(res.statusCode).toBe(400);
        expect(res.json().message).toContain('body.projectId');
      }
    });

    it('sees only its project’s logs, whatever filter it asks for', async () => {
      const k = { 'x-api-key': bound };
      const all = await app.inject({ url: '/emails/logs?limit=100', headers: k });
      const expected = emails.filter(
        (e) =>
          e.projectId === p1 && e.createdAt.getTime() >= dayStart(NOW, -DEFAULT_RETENTION_DAYS).getTime(),
      ).length;
      expect(all.json().meta.total).toBe(expected);
      const own = await app.inject({ url: `/emails/logs?projectId=${p1}`, headers: k });
      expect(own.json().meta.total).toBe(expected);
      const other = await app.inject({ url: `/emails/logs?projectId=${p2}`, headers: k });
      expect(other.statusCode).toBe(200);
      expect(other.json()).toMatchObject({ data: [], meta: { total: 0 } });
    });

    it('sees and changes only its project: another project → 404; creating one → 403', async () => {
      const k = { 'x-api-key': bound };
      expect((await app.inject({ url: `/projects/${p1}`, headers: k })).statusCode).toBe(200);
      expect((await app.inject({ url: `/projects/${p2}`, headers: k })).statusCode).toBe(404);
      expect(
        (await app.inject({ method: 'PATCH', url: `/projects/${p2}`, headers: k, payload: { name: 'x' } }))
          .statusCode,
      ).toBe(404);
      expect((await app.inject({ method: 'DELETE', url: `/projects/${p2}`, headers: k })).statusCode).toBe(
        404,
      );
      const list = (await app.inject({ url: '/projects', headers: k })).json();
      expect(list.data.map((p: { id: string }) => p.id)).toEqual([p1]);
      expect(list.meta.total).toBe(1);
      expect((await create('Mine', k)).statusCode).toBe(403);
    });
  });
});

describe('tenant settings merge a partial tracking', () => {
  /**
   * Issue 24, item 16: `PUT /tenants/:id/settings {"tracking":{"opens":false}}` answered 400 although
   * docs/sending.md says either field may be sent alone. A partial `tracking` is merged into the
   * tenant's current settings.
   */
  const { clock, A } = testTenants('settings-merge');
  let stores: Stores;
  let app: FastifyInstance;
  let admin: string;

  const put = (payload: unknown) =>
    app.inject({
      method: 'PUT',
      url: `/tenants/${A}/settings`,
      headers: bearer(admin),
      payload: payload as object,
    });
  const tracking = async () =>
    (await app.inject({ url: `/tenants/${A}/settings`, headers: bearer(admin) })).json().tracking;

  beforeAll(async () => {
    ({ stores, app } = await openApp(clock));
    admin = jwtFor(clock, A, 'admin');
  });
  afterAll(() => closeAll(app, stores));

  describe('PUT /tenants/:id/settings merges a partial tracking', () => {
    it('either field alone changes only that field', async () => {
      expect(await tracking()).toEqual({ opens: true, clicks: true });
      const opensOff = await put({ tracking: { opens: false } });
      expect(opensOff.statusCode, opensOff.body).toBe(200);
      expect(opensOff.json().tracking).toEqual({ opens: false, clicks: true });
      const clicksOff = await put({ tracking: { clicks: false } });
      expect(clicksOff.statusCode, clicksOff.body).toBe(200);
      expect(clicksOff.json().tracking).toEqual({ opens: false, clicks: false });
      expect((await put({ tracking: { opens: true } })).json().tracking).toEqual({
        opens: true,
        clicks: false,
      });
      // Another field leaves tracking as it is.
      expect((await put({ retentionDays: 30 })).json().tracking).toEqual({ opens: true, clicks: false });
      expect(await tracking()).toEqual({ opens: true, clicks: false });
    });

    it('still refuses an empty, mistyped or unknown tracking field (400)', async () => {
      for (const payload of [
        { tracking: {} },
        { tracking: { opens: 'yes' } },
        { tracking: { opens: true, pixels: false } },
        { tracking: null },
      ]) {
        const res = await put(payload);
        expect(res.statusCode, JSON.stringify(payload)).toBe(400);
        expect(res.json().code).toBe('FST_ERR_VALIDATION');
      }
      expect(await tracking()).toEqual({ opens: true, clicks: false });
    });
  });
});
