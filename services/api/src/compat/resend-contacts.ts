import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type Json, ResendError, send, type TernCall, validation } from './resend-kit.js';
import { audienceId, audienceName, contactAsResend, contactFields } from './resend-shapes.js';

/**
 * Resend's audiences (its segments) and contacts under `/compat/resend`: registered by
 * `resendCompatRoutes` on its own instance, so its hooks and error handler apply to them too.
 * Tern's audiences are names carried by contacts; Resend's id of one is its name in base64url.
 */
export function resendContactRoutes(app: FastifyInstance, tern: TernCall): void {
  for (const [path, object] of [
    ['/segments', 'segment'],
    ['/audiences', 'audience'],
  ] as const) {
    app.post(path, async (request, reply) => {
      const name = (request.body as { name?: unknown } | null)?.name;
      if (typeof name !== 'string' || name === '')
        throw new ResendError(422, 'missing_required_field', 'Missing `name` field.');
      // The credential must be able to read contacts; the name must be one Tern accepts.
      const { body } = await tern(request, 'GET', `/audiences?name=${encodeURIComponent(name)}&limit=1`);
      void body;
      return send(reply, { object, id: audienceId(name), name });
    });
    app.get(path, async (request, reply) => {
      const { body } = await tern(request, 'GET', '/audiences?limit=100');
      const meta = body.meta as { totalPages?: number } | undefined;
      return send(reply, {
        object: 'list',
        has_more: (meta?.totalPages ?? 1) > 1,
        data: ((body.data as Json[]) ?? []).map((a) => ({
          id: audienceId(String(a.name)),
          name: a.name,
          created_at: null,
        })),
      });
    });
    app.get(`${path}/:id`, async (request, reply) => {
      const name = audienceName((request.params as { id: string }).id);
      const { body } = await tern(request, 'GET', `/audiences?name=${encodeURIComponent(name)}&limit=1`);
      if (((body.data as Json[]) ?? []).length === 0)
        throw new ResendError(404, 'not_found', 'Audience not found');
      return send(reply, { object, id: audienceId(name), name, created_at: null });
    });
    app.delete(`${path}/:id`, async (request, reply) => {
      const name = audienceName((request.params as { id: string }).id);
      // The audience goes from every contact that carries it (the contacts stay, as in Resend's segments).
      for (let round = 0; round < 1000; round++) {
        const { body } = await tern(
          request,
          'GET',
          `/contacts?audience=${encodeURIComponent(name)}&limit=100`,
        );
        const contacts = (body.data as Json[]) ?? [];
        if (contacts.length === 0) break;
        for (const c of contacts) {
          const audiences = (c.audiences as string[]).filter((a) => a !== name);
          await tern(request, 'PATCH', `/contacts/${encodeURIComponent(String(c.id))}`, { audiences });
        }
      }
      return send(reply, { object, id: audienceId(name), deleted: true });
    });
  }

  /** The contact named by a Resend path (an id, or an email address), optionally within an audience. */
  async function findContact(
    request: FastifyRequest,
    idOrEmail: string,
    audience: string | null,
  ): Promise<Json> {
    let contact: Json | undefined;
    if (idOrEmail.includes('@')) {
      const { body } = await tern(request, 'GET', `/contacts?email=${encodeURIComponent(idOrEmail)}&limit=1`);
      contact = ((body.data as Json[]) ?? [])[0];
    } else {
      contact = (await tern(request, 'GET', `/contacts/${encodeURIComponent(idOrEmail)}`)).body;
    }
    if (!contact || (audience !== null && !(contact.audiences as string[]).includes(audience)))
      throw new ResendError(404, 'not_found', 'Contact not found');
    return contact;
  }

  async function createContact(request: FastifyRequest, audiences: string[]) {
    const input = (request.body ?? {}) as Json;
    if (typeof input.email !== 'string')
      throw new ResendError(422, 'missing_required_field', 'Missing `email` field.');
    const res = await tern(
      request,
      'POST',
      '/contacts',
      { email: input.email, ...contactFields(input), audiences },
      [201, 409],
    );
    if (res.status === 201) return { object: 'contact', id: res.body.id };
    // The address is a contact already: Resend adds it to the audience.
    const existing = await findContact(request, input.email, null);
    const merged = [...new Set([...(existing.audiences as string[]), ...audiences])];
    await tern(request, 'PATCH', `/contacts/${encodeURIComponent(String(existing.id))}`, {
      ...contactFields(input),
      audiences: merged,
    });
    return { object: 'contact', id: existing.id };
  }

  /** One Resend page of contacts: `limit` (≤ 100), `after` = the id of the last contact shown. */
  async function contactsPage(request: FastifyRequest, audience: string | null) {
    const q = request.query as { limit?: string; after?: string; before?: string };
    if (q.before !== undefined)
      throw validation('`before` is not supported by Tern: page forward with `after`');
    const limit = q.limit === undefined ? 20 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
      throw validation('`limit` must be an integer from 1 to 100');
    const url = (page: number, size: number) =>
      `/contacts?limit=${size}&page=${page}${audience === null ? '' : `&audience=${encodeURIComponent(audience)}`}`;
    let rest: Json[] = [];
    let page = 1;
    let total = 0;
    let found = q.after === undefined;
    // Tern pages by number; Resend's `after` is found by walking pages of 100 (bounded to 100 pages).
    for (; page <= 100; page++) {
      const { body } = await tern(request, 'GET', url(page, 100));
      const data = (body.data as Json[]) ?? [];
      total = Number((body.meta as { total?: number }).total ?? 0);
      if (!found) {
        const at = data.findIndex((c) => c.id === q.after);
        if (at >= 0) {
          found = true;
          rest = data.slice(at + 1);
        }
      } else rest = rest.concat(data);
      if ((found && rest.length > limit) || page * 100 >= total) break;
    }
    if (!found) throw validation('`after` is not the id of a contact of this list');
    return {
      object: 'list',
      has_more: rest.length > limit,
      data: rest.slice(0, limit).map((c) => {
        const { object: _o, properties: _p, ...contact } = contactAsResend(c);
        return contact;
      }),
    };
  }

  app.post('/contacts', async (request, reply) => {
    const segments = ((request.body ?? {}) as { segments?: unknown }).segments;
    const names = (Array.isArray(segments) ? segments : []).map((s) =>
      audienceName(typeof s === 'string' ? s : String((s as { id?: unknown })?.id ?? '')),
    );
    return send(reply, await createContact(request, names));
  });
  app.get('/contacts', async (request, reply) => send(reply, await contactsPage(request, null)));
  for (const prefix of ['/audiences/:audienceId', '/segments/:audienceId']) {
    app.post(`${prefix}/contacts`, async (request, reply) => {
      const name = audienceName((request.params as { audienceId: string }).audienceId);
      return send(reply, await createContact(request, [name]));
    });
    app.get(`${prefix}/contacts`, async (request, reply) =>
      send(
        reply,
        await contactsPage(request, audienceName((request.params as { audienceId: string }).audienceId)),
      ),
    );
  }
  for (const prefix of ['', '/audiences/:audienceId', '/segments/:audienceId']) {
    const audienceOf = (request: FastifyRequest) => {
      const id = (request.params as { audienceId?: string }).audienceId;
      return id === undefined ? null : audienceName(id);
    };
    app.get(`${prefix}/contacts/:contact`, async (request, reply) => {
      const contact = await findContact(
        request,
        (request.params as { contact: string }).contact,
        audienceOf(request),
      );
      return send(reply, contactAsResend(contact));
    });
    app.patch(`${prefix}/contacts/:contact`, async (request, reply) => {
      const contact = await findContact(
        request,
        (request.params as { contact: string }).contact,
        audienceOf(request),
      );
      await tern(
        request,
        'PATCH',
        `/contacts/${encodeURIComponent(String(contact.id))}`,
        contactFields((request.body ?? {}) as Json),
      );
      return send(reply, { object: 'contact', id: contact.id });
    });
    app.delete(`${prefix}/contacts/:contact`, async (request, reply) => {
      const audience = audienceOf(request);
      const contact = await findContact(request, (request.params as { contact: string }).contact, audience);
      if (audience === null)
        await tern(
          request,
          'DELETE',
          `/contacts/${encodeURIComponent(String(contact.id))}`,
          undefined,
          [200, 204],
        );
      else {
        // Within an audience: the contact leaves it (Resend's legacy audiences held their own contacts).
        const audiences = (contact.audiences as string[]).filter((a) => a !== audience);
        await tern(request, 'PATCH', `/contacts/${encodeURIComponent(String(contact.id))}`, { audiences });
      }
      return send(reply, { object: 'contact', contact: contact.id, deleted: true });
    });
  }
}
