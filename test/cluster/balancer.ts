import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../e2e/tern-process.js';
import { watchdog } from '../faults/servers.js';
import { waitFor } from '../support/services.js';

/**
 * The cluster suite's local balancer: HAProxy (Debian's) in front of the processes of one HTTP
 * role (infra/haproxy/http.cfg), on a port of its own, its servers added and taken out through
 * the runtime socket while traffic flows. With no process up it answers 503 + Retry-After. A
 * watchdog stops it if this test process dies before its teardown.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface Balancer {
  url: string;
  /** Adds a server and waits until its health check marks it up. */
  add(name: string, port: number): Promise<void>;
  /** Takes a server out: no new request reaches it (in-flight ones finish), then deletes it. */
  remove(name: string): Promise<void>;
  /** Takes a server out without deleting it (`maint`): the balancer routes around it. */
  drain(name: string): Promise<void>;
  /** Puts a drained server back and waits until its health check marks it up. */
  ready(name: string): Promise<void>;
  /** Server name → its operational state as HAProxy sees it (`2` = up). */
  states(): Promise<Record<string, string>>;
  destroy(): Promise<void>;
}

const ERROR_503 = [
  'HTTP/1.0 503 Service Unavailable',
  'Cache-Control: no-cache',
  'Connection: close',
  'Content-Type: application/json',
  'Retry-After: 1',
  '',
  '{"error":{"code":"UNAVAILABLE","message":"no process of this role is up: nothing was accepted, retry later"}}',
  '',
].join('\r\n');

export async function startBalancer(servers: { name: string; port: number }[]): Promise<Balancer> {
  const dir = mkdtempSync(join(tmpdir(), 'tern-cluster-lb-'));
  const port = await freePort();
  const socket = join(dir, 'admin.sock');
  writeFileSync(join(dir, '503.http'), ERROR_503);
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(
    cfg,
    readFileSync(join(root, 'infra/haproxy/http.cfg'), 'utf8')
      .replaceAll('@LISTEN@', `127.0.0.1:${port}`)
      .replaceAll('@SOCKET@', socket)
      .replaceAll('@ERRORFILE@', join(dir, '503.http'))
      .replaceAll('@SERVERS@', servers.map((s) => `  server ${s.name} 127.0.0.1:${s.port} check`).join('\n')),
  );
  const proxy: ChildProcess = spawn('haproxy', ['-f', cfg, '-db', '-q'], { stdio: 'ignore' });
  const unwatch = watchdog(`kill -9 "$LB_PID" 2>/dev/null; rm -rf "$LB_DIR"`, {
    LB_PID: String(proxy.pid),
    LB_DIR: dir,
  });

  const command = (line: string) =>
    new Promise<string>((res, rej) => {
      const c = connect(socket);
      let out = '';
      c.on('data', (d) => {
        out += d;
      });
      c.on('end', () => res(out));
      c.on('error', rej);
      c.write(`${line}\n`);
    });

  const balancer: Balancer = {
    url: `http://127.0.0.1:${port}`,
    async add(name, serverPort) {
      const out = await command(`add server tern/${name} 127.0.0.1:${serverPort} check`);
      if (!/New server registered/i.test(out)) throw new Error(`haproxy add server ${name}: ${out.trim()}`);
      await command(`enable health tern/${name}`);
      await command(`enable server tern/${name}`);
      await waitFor(async () => (await balancer.states())[name] === '2', {
        timeoutMs: 60_000,
        intervalMs: 200,
        description: `haproxy: ${name} up`,
      });
    },
    async remove(name) {
      await command(`set server tern/${name} state maint`);
      // In-flight requests finish on it; then it goes.
      await waitFor(async () => (await sessions(name)) === 0, {
        timeoutMs: 30_000,
        intervalMs: 200,
        description: `haproxy: ${name} drained`,
      }).catch(() => undefined);
      await command(`del server tern/${name}`);
    },
    async drain(name) {
      await command(`set server tern/${name} state maint`);
    },
    async ready(name) {
      await command(`set server tern/${name} state ready`);
      await waitFor(async () => (await balancer.states())[name] === '2', {
        timeoutMs: 60_000,
        intervalMs: 200,
        description: `haproxy: ${name} up`,
      });
    },
    async states() {
      // show servers state: be_id be_name srv_id srv_name srv_addr srv_op_state …
      const out = await command('show servers state tern');
      const states: Record<string, string> = {};
      for (const line of out.split('\n')) {
        const f = line.trim().split(/\s+/);
        if (f.length > 5 && /^\d+$/.test(f[0]!)) states[f[3]!] = f[5]!;
      }
      return states;
    },
    async destroy() {
      proxy.kill('SIGKILL');
      unwatch();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // show stat (CSV): pxname,svname,qcur,qmax,scur,…
  const sessions = async (name: string) => {
    const line = (await command('show stat')).split('\n').find((l) => l.startsWith(`tern,${name},`));
    return line ? Number(line.split(',')[4]) : 0;
  };
  try {
    await waitFor(
      async () => {
        const states = await balancer.states();
        return servers.every((s) => states[s.name] === '2');
      },
      { timeoutMs: 60_000, intervalMs: 200, description: 'haproxy: every server up' },
    );
  } catch (error) {
    await balancer.destroy();
    throw error;
  }
  return balancer;
}
