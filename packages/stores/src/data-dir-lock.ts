import { linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';

/**
 * An exclusive, process-level lock on an embedded store's data directory: a file holding the
 * owner's pid. It is written aside and hard-linked into place, so it appears atomically with its
 * content (a reader never sees an empty lock). Embedded engines (PGlite) do not lock their directory, and
 * two processes writing one directory corrupt it; this makes the second one fail at start with
 * a message instead.
 *
 * A lock left by a crashed process is taken over when its pid is no longer alive, or when it
 * names this very process without this process holding it (a container restarted with the
 * same pid). Two processes taking over the same stale lock at the same instant is not covered.
 */
export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError';
}

const heldHere = new Set<string>();

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(lockPath: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(lockPath, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function removeIfPresent(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/** Takes the lock or throws `DataDirLockedError`; the returned function releases it. */
export function acquireDataDirLock(lockPath: string, what: string): () => void {
  if (heldHere.has(lockPath)) {
    throw new DataDirLockedError(
      `${what} is already open in this process (lock ${lockPath}); share the one store instead of opening it twice`,
    );
  }
  const tmpPath = `${lockPath}.${process.pid}.tmp`;
  writeFileSync(tmpPath, `${process.pid}\n`);
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(tmpPath, lockPath);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const owner = readOwner(lockPath);
        const stale = owner === undefined || owner === process.pid || !pidAlive(owner);
        if (!stale) {
          throw new DataDirLockedError(
            `${what} is in use by process ${owner} (lock ${lockPath}). An embedded store serves one process: ` +
              'stop the other process, or use a server (DATABASE_URL) to share it. ' +
              'If no such process uses it, delete the lock file.',
          );
        }
        removeIfPresent(lockPath);
        continue;
      }
      heldHere.add(lockPath);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        heldHere.delete(lockPath);
        removeIfPresent(lockPath);
      };
    }
  } finally {
    removeIfPresent(tmpPath);
  }
  throw new DataDirLockedError(`${what}: could not take the lock ${lockPath} (contended)`);
}
