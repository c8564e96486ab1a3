/**
 * Settles as `promise` does, or rejects with `onTimeout()` (default `Error('timeout')`) when it
 * has not settled within `ms`. The timer is cleared either way; `promise` itself is not cancelled.
 */
export async function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  onTimeout: () => Error = () => new Error('timeout'),
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
