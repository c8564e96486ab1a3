// Writes docs/api.md from the OpenAPI document of the query API (`npm run docs:api`). No store
// is reached: pg and the ClickHouse client connect lazily, and only /docs/json is requested.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { referenceDocument, renderApiReference } from '../src/index.js';

const target = fileURLToPath(new URL('../../../docs/api.md', import.meta.url));
await writeFile(target, renderApiReference(await referenceDocument()));
console.log(`wrote ${target}`);
