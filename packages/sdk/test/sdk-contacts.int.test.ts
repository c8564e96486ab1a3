// client.contacts.* against the real query service (createApiApp on a fresh Postgres database,
// listening on a loopback port), with keys minted through the API as a user would.
import { beforeAll, describe, expect, it } from 'vitest';
import { createClock, createKey, jwtFor, suffix } from '../../../services/api/test/support.js';
import { init, TernApiError } from '../src/index.js';
import { useLoopbackApi } from './support.js';

const clock = createClock(new Date().toISOString());
const tenantId = `sdk-contacts-${suffix()}`;
const api = useLoopbackApi(clock);
let writeKey: string;
let readWriteKey: string;

beforeAll(async () => {
  const owner = jwtFor(clock, tenantId);
  writeKey = (await createKey(api.app, owner, tenantId, { scopes: ['contacts:write'] })).key;
  readWriteKey = (await createKey(api.app, owner, tenantId, { scopes: ['contacts:read', 'contacts:write'] }))
    .key;
});

describe('client.contacts', () => {
  it('create, get, list by audience, update, remove', async () => {
    const { contacts } = init({ apiKey: readWriteKey, baseUrl: api.baseUrl });
    const created = await contacts.create({
      email: 'Ada@Example.com',
      firstName: 'Ada',
      audiences: ['news'],
    });
    expect(created).toMatchObject({ email: 'ada@example.com', firstName: 'Ada', subscribed: true });
    expect(await contacts.get(created.id)).toEqual(created);
    const page = await contacts.list({ audience: 'news', limit: 10 });
    expect(page.data.map((c) => c.id)).toEqual([created.id]);
    expect(page.meta).toEqual({ page: 1, limit: 10, total: 1, totalPages: 1 });
    const updated = await contacts.update(created.id, { subscribed: false, audiences: ['news', 'vip'] });
    expect(updated).toMatchObject({ subscribed: false, audiences: ['news', 'vip'] });
    expect((await contacts.audiences()).data).toEqual([
      { name: 'news', contacts: 1, subscribed: 0, reachable: 0 },
      { name: 'vip', contacts: 1, subscribed: 0, reachable: 0 },
    ]);
    expect((await contacts.audiences({ name: 'vip' })).data.map((a) => a.name)).toEqual(['vip']);
    await contacts.remove(created.id);
    const err = await contacts.get(created.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TernApiError);
    expect(err).toMatchObject({ status: 404, message: 'Contact not found' });
  });

  it('import and export round-trip through CSV', async () => {
    const { contacts } = init({ apiKey: readWriteKey, baseUrl: api.baseUrl });
    const result = await contacts.importCsv('email,first_name\nb@x.io,Bo\nbad,X\n', { audience: 'imported' });
    expect(result).toEqual({
      rows: 2,
      created: 1,
      updated: 0,
      failed: 1,
      errors: [{ row: 3, message: 'email must be a valid email address' }],
    });
    const csv = await contacts.exportCsv({ audience: 'imported' });
    const lines = csv.trimEnd().split('\n');
    expect(lines[0]).toBe(
      'id,email,first_name,last_name,subscribed,audiences,attributes,created_at,updated_at',
    );
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(',b@x.io,Bo,,true,imported,');
  });

  it('surfaces 409 and 403 as typed errors, without retrying a create', async () => {
    const { contacts } = init({ apiKey: readWriteKey, baseUrl: api.baseUrl });
    await contacts.create({ email: 'twice@x.io' });
    await expect(contacts.create({ email: 'TWICE@x.io' })).rejects.toMatchObject({ status: 409 });
    const writeOnly = init({ apiKey: writeKey, baseUrl: api.baseUrl });
    await expect(writeOnly.contacts.list()).rejects.toMatchObject({
      status: 403,
      message: 'Missing required API key scope',
    });
  });
});
