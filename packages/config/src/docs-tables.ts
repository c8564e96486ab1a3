import { CONFIG_DOCS, type VariableDoc } from './docs.js';

/**
 * Variables read by tools rather than by the services (`loadConfig`): the demo seeder and the SDK.
 * Listed in a table of their own so the README names every variable the code reads.
 */
export const TOOL_VARIABLES = {
  TERN_URL: {
    meaning: '`npm run seed:demo` and `npm run mcp`: the Tern they call',
    default: '`http://127.0.0.1:$PORT`',
  },
  SEED_TENANT: { meaning: '`npm run seed:demo`: the tenant of the seeded stream', default: '`demo`' },
  SEED_EMAILS: { meaning: '`npm run seed:demo`: emails posted through `POST /events`', default: '3000' },
  SEED_SENDS: { meaning: '`npm run seed:demo`: emails sent through `POST /emails/batch`', default: '60' },
  TERN_API_KEY: {
    meaning:
      '`npm run seed:demo`, `npm run mcp` (required: its scopes decide what the tools may do) and the SDK (`init()` without `apiKey`): an API key of the tenant',
    default: 'unset',
  },
  TERN_BASE_URL: { meaning: 'the SDK: base URL when `init()` is given none', default: 'unset' },
  TERN_TEST_SHUTDOWN_HANG: {
    meaning:
      "test hook of `test/e2e/shutdown.e2e.test.ts`: `<component>:<promise|block>` makes that component's close hang; read only with `NODE_ENV=test`, ignored otherwise",
    default: 'unset',
  },
} as const satisfies Record<string, VariableDoc>;

function escapeCell(text: string): string {
  return text.replaceAll('|', '\\|');
}

function table(rows: [string, VariableDoc][]): string {
  const lines = ['| var | meaning | default |', '| --- | --- | --- |'];
  for (const [name, doc] of rows)
    lines.push(`| \`${name}\` | ${escapeCell(doc.meaning)} | ${escapeCell(doc.default)} |`);
  return lines.join('\n');
}

/** The configuration section's tables, in Markdown (the README holds them between markers). */
export function renderConfigTables(): string {
  return [
    table(Object.entries(CONFIG_DOCS) as [string, VariableDoc][]),
    '',
    'Read by the tools, not by the services:',
    '',
    table(Object.entries(TOOL_VARIABLES)),
  ].join('\n');
}

export const CONFIG_TABLE_START = '<!-- config-table:start (npm run docs:config writes this part) -->';
export const CONFIG_TABLE_END = '<!-- config-table:end -->';

/** `readme` with the part between the markers replaced by the tables; throws when a marker is missing. */
export function withConfigTables(readme: string): string {
  const start = readme.indexOf(CONFIG_TABLE_START);
  const end = readme.indexOf(CONFIG_TABLE_END);
  if (start < 0 || end < start)
    throw new Error(`README.md lacks the markers ${CONFIG_TABLE_START} … ${CONFIG_TABLE_END}`);
  return `${readme.slice(0, start + CONFIG_TABLE_START.length)}\n\n${renderConfigTables()}\n\n${readme.slice(end)}`;
}
