/** How `createCoalescer` forms and runs its batches. */
export interface CoalescerOptions<T> {
  /** Batches run at once. Default 1: the items queued while one runs make the next. */
  concurrency?: number;
  /**
   * An item's weight; a batch holds items up to `maxBatch` in total weight (always at least one
   * item). Default 1 each: `maxBatch` counts items.
   */
  weight?: (item: T) => number;
  /**
   * A failing batch of several items is run again item by item, and each caller gets its own
   * item's outcome: one bad item fails its own caller alone. Default false: it fails them all.
   */
  retryAlone?: boolean;
}

/**
 * Group commit for concurrent callers: `submit` queues an item and resolves once `run` has handled
 * the batch that carried it; `run` is called for `concurrency` batches at a time (default one), and
 * the items queued while they run make the next. Nothing waits on a timer: an item arriving while a
 * slot is free goes alone at once, and under load each round trip (and each commit) serves every
 * caller that arrived meanwhile. A batch is always started after each of its items was submitted,
 * so what it reads includes whatever committed before they arrived; items go out in the order they
 * came. A failing `run` fails every item of its batch (with `retryAlone`, only those failing alone).
 *
 * Users: the MX listener's appends and announced marks (issue 43: each session's 451 lets its MTA
 * retry), the event stream's page cache's head lookups (issue 42, `run` writes each item's answer
 * into the item), the send rows of `enqueueSends` and the Kafka consumer's partition batches (issue
 * 45 item 2).
 */
export function createCoalescer<T>(
  run: (items: T[]) => Promise<void>,
  maxBatch = 256,
  options: CoalescerOptions<T> = {},
) {
  const concurrency = options.concurrency ?? 1;
  const weight = options.weight ?? (() => 1);
  if (!(Number.isInteger(concurrency) && concurrency >= 1)) throw new Error('concurrency must be ≥ 1');
  let queue: { item: T; done: () => void; failed: (error: unknown) => void }[] = [];
  let running = 0;

  function take(): typeof queue {
    let n = 0;
    let total = 0;
    while (n < queue.length) {
      total += weight(queue[n]!.item);
      if (n > 0 && total > maxBatch) break;
      n++;
    }
    const batch = queue.slice(0, n);
    queue = queue.slice(n);
    return batch;
  }

  async function drain(): Promise<void> {
    running++;
    while (queue.length > 0) {
      const batch = take();
      try {
        await run(batch.map((b) => b.item));
        for (const b of batch) b.done();
      } catch (error) {
        if (!options.retryAlone || batch.length === 1) for (const b of batch) b.failed(error);
        else for (const b of batch) await run([b.item]).then(b.done, b.failed);
      }
    }
    running--;
  }
  return (item: T): Promise<void> =>
    new Promise<void>((done, failed) => {
      queue.push({ item, done, failed });
      if (running < concurrency) void drain();
    });
}
