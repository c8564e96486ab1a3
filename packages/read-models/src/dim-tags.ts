import type { ClickHouseClient } from '@clickhouse/client';

/**
 * The tag companion of the sliceable rollup (SPEC §26, issue 44; ClickHouse migration 0033): each
 * version `email_dims_v<n>` has `email_dims_v<n>_tags`, its rows once per tag, keyed by (tenant,
 * tag, bucket, …), so that a breakdown filtered by a tag reads that tag's rows only instead of
 * testing every row's tags. Written with its version by the same ship (`daily-analytics.ts`);
 * read through the view `email_dim_tags`, which a reprojection swaps with `email_dims`.
 */
export const DIM_TAGS_VIEW = 'email_dim_tags';

/** The companion of a version of the sliceable rollup. */
export const dimTagsTableOf = (version: string): string => `${version}_tags`;
const DIM_TAGS_TABLE = /^email_dims_v([1-9][0-9]*)_tags$/;

/**
 * Rows of the rollup once per distinct tag they carry, with that tag (an untagged row has none): an
 * email sent with a tag twice is still one email under that tag's filter, as `has(tags, …)` counts it.
 */
export const tagRowsOf = <R extends { tags: readonly string[] }>(
  rows: readonly R[],
): (R & { tag: string })[] => rows.flatMap((r) => [...new Set(r.tags)].map((tag) => ({ ...r, tag })));

/** The companions that exist in ClickHouse. */
export async function dimTagsTables(ch: ClickHouseClient): Promise<string[]> {
  const rs = await ch.query({
    query:
      "SELECT name FROM system.tables WHERE database = currentDatabase() AND name LIKE 'email_dims_v%_tags'",
    format: 'JSONEachRow',
  });
  return (await rs.json<{ name: string }>()).map((r) => r.name).filter((n) => DIM_TAGS_TABLE.test(n));
}

/**
 * (Re)creates `to`'s companion empty, as `from`'s plus `addColumns`. Without a companion of `from`
 * (an install that reprojected before migration 0033) `to` gets none, and tag filters read `to`.
 */
export async function createDimTagsVersion(
  ch: ClickHouseClient,
  from: string,
  to: string,
  addColumns: readonly string[],
): Promise<void> {
  const [source, target] = [dimTagsTableOf(from), dimTagsTableOf(to)];
  await ch.command({ query: `DROP TABLE IF EXISTS ${target}` });
  if (!(await dimTagsTables(ch)).includes(source)) return;
  await ch.command({ query: `CREATE TABLE ${target} AS ${source}` });
  for (const column of addColumns) await ch.command({ query: `ALTER TABLE ${target} ADD COLUMN ${column}` });
}

/** Points `email_dim_tags` at `version`'s companion, when it has one. */
export async function serveDimTagsTable(ch: ClickHouseClient, version: string): Promise<void> {
  const table = dimTagsTableOf(version);
  if ((await dimTagsTables(ch)).includes(table))
    await ch.command({ query: `CREATE OR REPLACE VIEW ${DIM_TAGS_VIEW} AS SELECT *, day FROM ${table}` });
}

/** How long an answer of `createDimTagsCheck` is reused. */
const CHECK_TTL_MS = 10_000;

/**
 * Whether `email_dim_tags` serves the companion of the version `email_dims` serves — what a
 * reader checks before reading a tag filter there (else it reads `email_dims`: an install whose
 * version has no companion, or a swap stopped between the two views). Asked of ClickHouse at
 * most every 10 s; the queries name the views, so a swap of both is read at once whatever the
 * answer kept. Only a swap stopped halfway is seen up to 10 s late.
 */
export function createDimTagsCheck(ch: ClickHouseClient, ttlMs = CHECK_TTL_MS): () => Promise<boolean> {
  let answer: { at: number; value: Promise<boolean> } | undefined;
  const ask = async () => {
    const rs = await ch.query({
      query: `SELECT name, as_select FROM system.tables
               WHERE database = currentDatabase() AND name IN ('email_dims', '${DIM_TAGS_VIEW}')`,
      format: 'JSONEachRow',
    });
    const served = new Map(
      (await rs.json<{ name: string; as_select: string }>()).map((r) => [
        r.name,
        /\bemail_dims_v([1-9][0-9]*)(_tags)?\b/.exec(r.as_select),
      ]),
    );
    const [dims, tags] = [served.get('email_dims'), served.get(DIM_TAGS_VIEW)];
    return dims?.[2] === undefined && tags?.[2] === '_tags' && dims?.[1] === tags[1];
  };
  return () => {
    const now = Date.now();
    if (!answer || now - answer.at >= ttlMs) {
      // A check that fails reads `email_dims` (the same answers), and is asked again next time.
      const value: Promise<boolean> = ask().catch(() => {
        if (answer?.value === value) answer = undefined;
        return false;
      });
      answer = { at: now, value };
    }
    return answer.value;
  };
}

/**
 * For the ship's insert into a companion: a version made before migration 0033 has none (ClickHouse
 * UNKNOWN_TABLE, code 60), and its rows then go to the version only. Any other error is thrown.
 */
export function noCompanion(error: unknown): void {
  const e = error as { code?: string; clickhouseCode?: number; type?: string } | null;
  if (e?.code !== '60' && e?.clickhouseCode !== 60 && e?.type !== 'UNKNOWN_TABLE') throw error;
}
