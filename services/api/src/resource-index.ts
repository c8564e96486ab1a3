import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * `resources.generated.ts` from the source: every `export const <x>Resource = defineResource(`
 * of a folder's `routes.ts`, sorted by folder. `npm run gen:resources` writes it; a test compares.
 */
export function renderResourceIndex(srcDir: string): string {
  const found: Array<{ name: string; file: string }> = [];
  for (const folder of readdirSync(srcDir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort()) {
    let text: string;
    try {
      text = readFileSync(join(srcDir, folder, 'routes.ts'), 'utf8');
    } catch {
      continue;
    }
    for (const m of text.matchAll(/^export const (\w+)(?:: [^=]+)? = defineResource\(/gm))
      found.push({ name: m[1]!, file: `./${folder}/routes.js` });
  }
  const names = found.map((r) => r.name);
  // As biome formats it (line width 110): one line when it fits, else one element a line. The type
  // names each module (`typeof x`), so the declaration does not spell out their repositories.
  const type = `readonly [${names.map((n) => `typeof ${n}`).join(', ')}]`;
  const oneLine = `export const RESOURCES: ${type} = [${names.join(', ')}];`;
  const list =
    oneLine.length <= 110
      ? [oneLine]
      : [
          'export const RESOURCES: readonly [',
          ...names.map((n) => `  typeof ${n},`),
          '] = [',
          ...names.map((n) => `  ${n},`),
          '];',
        ];
  return [
    '// Written by `npm run gen:resources` from the `defineResource` exports of src/*/routes.ts: do not',
    '// edit. services/api/test/contract/app.unit.test.ts fails when it is not current.',
    ...found.map((r) => `import { ${r.name} } from '${r.file}';`),
    '',
    '/** Every tenant resource `apiRoutes` mounts, with the repository its routes take (`resource-kit.ts`). */',
    ...list,
    '',
  ].join('\n');
}
