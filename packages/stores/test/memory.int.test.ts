// The idle memory release of the embedded engine (issue 10: idle RSS ≤ 400 MB), on the real chDB:
// libchdb.so's resident pages are given back, and the engine answers the same afterwards (its
// pages come back from the page cache). chDB binds one data directory per process: this file
// opens its own.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/services.js';
import { type ClickHouseStore, createClickHouse, releaseIdleMemory, rssKiB } from '../src/index.js';

/** Resident KiB of the mappings of files whose path matches. */
function residentKiB(path: RegExp): number {
  let kib = 0;
  let matching = false;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S{4} \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) matching = path.test(head[1] ?? '');
    else if (matching && line.startsWith('Rss:')) kib += Number.parseInt(line.slice(4), 10);
  }
  return kib;
}

const LIBCHDB = /\/libchdb\.so$/;
let store: ClickHouseStore;

const answer = async () => {
  const result = await store.client.query({
    query: 'SELECT k, sum(v) AS s FROM t GROUP BY k ORDER BY k',
    format: 'JSONEachRow',
  });
  return result.json();
};

beforeAll(async () => {
  store = createClickHouse({ dataDir: tempDir('tern-memory-') });
  await store.client.command({ query: 'CREATE TABLE t (k UInt32, v UInt64) ENGINE = MergeTree ORDER BY k' });
  await store.client.command({ query: 'INSERT INTO t SELECT number % 7, number FROM numbers(100000)' });
});

afterAll(async () => {
  await store?.close();
});

describe('releaseIdleMemory', () => {
  it('gives back libchdb.so’s resident pages; the engine answers the same afterwards', async () => {
    const before = await answer();
    const residentBefore = residentKiB(LIBCHDB);
    // The loader and chDB's constructors touched well over 100 MiB of the library.
    expect(residentBefore).toBeGreaterThan(100 * 1024);
    const rssBefore = rssKiB();

    const released = releaseIdleMemory();
    expect(released).not.toBeNull();
    expect(released!.libraryBytes).toBeGreaterThan(residentBefore * 1024);
    expect(residentKiB(LIBCHDB)).toBeLessThan(residentBefore / 2);
    expect(rssKiB()).toBeLessThan(rssBefore - 50 * 1024);

    expect(await answer()).toEqual(before);
    await store.client.command({ query: 'INSERT INTO t VALUES (1, 5)' });
    const sumOfOne = (rows: unknown) =>
      Number((rows as { k: number; s: number | string }[]).find((r) => r.k === 1)?.s);
    expect(sumOfOne(await answer())).toBe(sumOfOne(before) + 5);
  });

  it('touches nothing of a library it is not asked to release', () => {
    const node = residentKiB(/\/node$/);
    const released = releaseIdleMemory(/\/no-such-library\.so$/);
    expect(released?.libraryBytes).toBe(0);
    expect(residentKiB(/\/node$/)).toBeGreaterThanOrEqual(node * 0.9);
  });
});
