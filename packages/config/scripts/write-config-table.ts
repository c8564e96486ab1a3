// `npm run docs:config`: rewrites the README's configuration tables from the config schema's docs.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withConfigTables } from '../src/docs-tables.js';

const readme = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'README.md');
writeFileSync(readme, withConfigTables(readFileSync(readme, 'utf8')));
console.log(`wrote the configuration tables of ${readme}`);
