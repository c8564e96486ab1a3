/**
 * Group commit for concurrent callers: `submit` queues an item and resolves once `run` has handled
 * the batch that carried it; `run` is called for one batch at a time, and the items queued while it
 * runs make the next batch. Nothing waits on a timer: an item arriving while nothing runs goes
 * alone at once, and under load each round trip (and each commit) serves every caller that arrived
 * meanwhile. A batch is always started after each of its items was submitted, so what it reads
 * includes whatever committed before they arrived. A failing `run` fails every item of its batch.
 *
 * Users: the MX listener's appends and announced marks (issue 43: each session's 451 lets its MTA
 * retry), the event stream's page cache's head lookups (issue 42, `run` writes each item's answer
 * into the item).
 */
export function createCoalescer<T>(run: (items: T[]) => Promise<void>, maxBatch = 256) {
  let queue: { item: T; done: () => void; failed: (error: unknown) => void }[] = [];
  let running = false;
  async function drain(): Promise<void> {
    running = true;
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      try {
        await run(batch.map((b) => b.item));
        for (const b of batch) b.done();
      } catch (error) {
        for (const b of batch) b.failed(error);
      }
    }
    running = false;
  }
  return (item: T): Promise<void> =>
    new Promise<void>((done, failed) => {
      queue.push({ item, done, failed });
      if (!running) void drain();
    });
}
