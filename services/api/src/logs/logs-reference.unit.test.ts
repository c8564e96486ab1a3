// The reference of GET /emails/logs (docs/api.md, generated from the OpenAPI document): every
// SPEC §19 filter has an example, and the answer's example carries a meta.nextCursor this server
// would take back as `cursor`.
import { beforeAll, describe, expect, it } from 'vitest';
import { type OpenApiDocument, referenceDocument, renderApiReference } from '../index.js';
import { decodeLogsCursor, encodeLogsCursor } from './cursor.js';
import { logsQuerySchema } from './schemas.js';

let doc: OpenApiDocument;

beforeAll(async () => {
  doc = await referenceDocument();
});

type Param = { name: string; in: string; schema?: { example?: unknown } };
type Op = { parameters?: Param[] };

describe('GET /emails/logs in the reference', () => {
  const op = () => (doc.paths['/emails/logs'] as Record<string, Op>).get!;

  it.each(['status', 'from', 'to', 'tag', 'q', 'projectId', 'cursor'])(
    '%s has an example the query schema accepts, shown in docs/api.md',
    (name) => {
      const param = op().parameters?.find((p) => p.in === 'query' && p.name === name);
      const example = param?.schema?.example;
      expect(typeof example, name).toBe('string');
      expect(logsQuerySchema.safeParse({ [name]: example }).success).toBe(true);
      expect(renderApiReference(doc)).toContain(`Example: \`${example}\`.`);
    },
  );

  it('the answer example has a nextCursor the route takes back: the next page', () => {
    const reference = renderApiReference(doc);
    const section = reference.slice(reference.indexOf('### `GET /emails/logs`')).split('\n### ')[0]!;
    const ok = section.slice(section.indexOf('- **200**')).split('\n- **')[0]!;
    const example = JSON.parse(ok.slice(ok.indexOf('```json') + 7, ok.lastIndexOf('```'))) as {
      meta: { page: number; nextCursor: string };
    };
    expect(example.meta.nextCursor).toEqual(expect.any(String));
    expect(decodeLogsCursor(example.meta.nextCursor)).toMatchObject({ page: example.meta.page + 1 });
  });

  it('the cursor encodes to an opaque token the route decodes back', () => {
    const cursor = { createdAt: '2026-05-10T10:00:00.000000', id: 'em_1', page: 2 };
    const token = encodeLogsCursor(cursor);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeLogsCursor(token)).toEqual(cursor);
  });
});
