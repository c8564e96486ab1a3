import { readFile } from 'node:fs/promises';
import { validateEvents } from '@tern/contracts';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  CREDENTIAL_EXTENSION,
  INGEST_EXAMPLE,
  type OpenApiDocument,
  referenceDocument,
  renderApiReference,
} from '../../src/index.js';

// docs/api.md is generated from the OpenAPI document; this fails when a route changed and the
// file was not regenerated (`npm run docs:api`), or when a route lacks what the reference shows.

let doc: OpenApiDocument;

beforeAll(async () => {
  doc = await referenceDocument();
});

describe('docs/api.md', () => {
  it('is what `npm run docs:api` generates from the current routes', async () => {
    const onDisk = await readFile(new URL('../../../../docs/api.md', import.meta.url), 'utf8');
    expect(onDisk, 'docs/api.md is stale: run `npm run docs:api`').toBe(renderApiReference(doc));
  });

  it('covers every route with its credential, an example request and an example of every answer with a body', () => {
    const reference = renderApiReference(doc);
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const heading = `### \`${method.toUpperCase()} ${path}\``;
        expect(reference, heading).toContain(heading);
        const section = reference.slice(reference.indexOf(heading)).split('\n### ')[0]!;
        expect(op[CREDENTIAL_EXTENSION], heading).toBeTruthy();
        expect(section).toContain(`curl -X ${method.toUpperCase()} "$TERN_URL`);
        expect(section).not.toMatch(/\$TERN_URL[^"]*\{/); // every path parameter has an example
        if (op.requestBody) expect(section, `${heading} body`).toMatch(/(-d|--data-binary) '/);
        for (const [status, response] of Object.entries(op.responses ?? {})) {
          if (!response.content) continue;
          const after = section.slice(section.indexOf(`- **${status}**`));
          expect(after.split('\n- **')[0], `${heading} ${status}`).toMatch(/```(json|text)\n/);
        }
      }
    }
  });

  it('documents POST /events (ingest) beside the generated part, with an example ingest accepts', () => {
    expect(renderApiReference(doc)).toContain('### `POST /events`');
    expect(validateEvents(INGEST_EXAMPLE.events)).toMatchObject({ ok: true });
  });

  it('shows the credential rule from the route config', () => {
    const reference = renderApiReference(doc);
    expect(reference).toContain('API key with `templates:read`, or a dashboard JWT (any role).');
    expect(reference).toContain('every API key gets 403 `Missing required API key scope`');
    expect(reference).toContain(
      'Dashboard JWT of the tenant in `:id` (role owner or admin); API keys get 403.',
    );
  });
});
