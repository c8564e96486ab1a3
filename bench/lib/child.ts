import { spawn } from 'node:child_process';

export interface ChildOptions {
  /** Killed (SIGKILL) after this long; the promise then rejects. */
  timeoutMs: number;
  /** Extra node flags, e.g. `--cpu-prof`. */
  nodeFlags?: string[];
  /** The node binary to run it on (BENCH_NODES); default this process's. */
  node?: string;
  /** Pass the child's stdout through instead of collecting it. */
  inheritStdout?: boolean;
  env?: NodeJS.ProcessEnv;
  /** Called with the child's pid once it runs. */
  onSpawn?: (pid: number) => void;
  /** Called with each complete stdout line as it arrives. */
  onLine?: (line: string) => void;
}

/** Runs a TypeScript file in a new node process (through tsx); resolves with its stdout. */
export function runTsx(file: string, args: string[], opts: ChildOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      opts.node ?? process.execPath,
      [...(opts.nodeFlags ?? []), '--import', 'tsx', file, ...args],
      {
        stdio: ['ignore', opts.inheritStdout ? 'inherit' : 'pipe', 'inherit'],
        env: opts.env ?? process.env,
      },
    );
    if (child.pid !== undefined) opts.onSpawn?.(child.pid);
    let stdout = '';
    let partial = '';
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (d: string) => {
      stdout += d;
      partial += d;
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) opts.onLine?.(line);
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${file} did not finish within ${opts.timeoutMs} ms; killed`));
    }, opts.timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${file} exited with ${signal ?? code}`));
    });
  });
}

export interface RunningChild {
  pid: number;
  /** Resolves with the first stdout line that `matches`. */
  line: Promise<string>;
  /** SIGTERM, then waits for the exit (SIGKILL after 10 s). */
  stop(): Promise<void>;
}

/** Starts a long-running TypeScript file (a server); stdout lines are watched, stderr passed through. */
export function startTsx(file: string, args: string[], matches: (line: string) => boolean): RunningChild {
  const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const line = new Promise<string>((resolve, reject) => {
    let partial = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      partial += d;
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      const found = lines.find(matches);
      if (found !== undefined) resolve(found);
    });
    void exited.then(() => reject(new Error(`${file} exited before it was ready`)));
  });
  return {
    pid: child.pid ?? -1,
    line,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
