// Writes services/api/src/resources.generated.ts: the list of tenant resources `apiRoutes` mounts,
// from each routes file's `defineResource` export (`npm run gen:resources`).
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { renderResourceIndex } from '../src/resource-index.js';

const src = fileURLToPath(new URL('../src/', import.meta.url));
const target = `${src}resources.generated.ts`;
await writeFile(target, renderResourceIndex(src));
console.log(`wrote ${target}`);
