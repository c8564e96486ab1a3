import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const POSTFIX = '/usr/sbin/postfix';

export interface PostfixOptions {
  /** Loopback port of its SMTP listener (the relay behind Tern's SMTP_URL). */
  port: number;
  /** Next hops by recipient domain: `domain → 127.0.0.1:port` (SMTP, no DNS). */
  transports: Record<string, number>;
  /** How long mail may wait before its sender gets a "delayed" DSN. Default 1 s. */
  delayWarning?: string;
  /** The watchdog stops Postfix after this long whatever happens. Default 10 min. */
  maxLifetimeSeconds?: number;
}

export interface TestPostfix {
  dir: string;
  /** Postfix's own log (`maillog_file`). */
  log(): string;
  stop(): Promise<void>;
}

/** Makes sure Debian's Postfix is installed (infra/postfix.sh: apt-get when missing). */
export function ensurePostfix(): void {
  if (existsSync(POSTFIX)) return;
  execFileSync('bash', [join(root, 'infra/postfix.sh')], { stdio: ['ignore', 'pipe', 'inherit'] });
}

/** Runs a postfix command; its messages go to stderr only on a terminal, so they are read from the log. */
function postfix(dir: string, command: string): void {
  execFileSync(POSTFIX, ['-c', dir, command], { stdio: 'ignore', timeout: 60_000 });
}

function uid(name: string): number {
  return Number(execFileSync('id', ['-u', name]).toString().trim());
}
function gid(name: string): number {
  return Number(execFileSync('getent', ['group', name]).toString().split(':')[2]);
}

/**
 * A Postfix of the test's own (SPEC §21's "a real MTA writes the bounces"): its config directory,
 * queue and log in a fresh temporary directory, one SMTP listener on a loopback high port, every
 * service unchrooted, no local delivery, next hops only through `transport_maps` (no DNS), and
 * retries and delay warnings within seconds. Needs root (Postfix's master does); CI runs as root.
 *
 * A watchdog (a detached shell) stops it when the test process is gone or after
 * `maxLifetimeSeconds`, so no Postfix outlives its test even on a crash or a kill.
 */
export async function startPostfix(opts: PostfixOptions): Promise<TestPostfix> {
  ensurePostfix();
  const dir = mkdtempSync(join(tmpdir(), 'tern-postfix-'));
  chmodSync(dir, 0o755);
  const queue = join(dir, 'queue');
  const data = join(dir, 'data');
  mkdirSync(queue);
  mkdirSync(data);
  chownSync(data, uid('postfix'), 0);
  const maillog = join(dir, 'maillog');
  writeFileSync(maillog, '');
  const transports = Object.entries(opts.transports)
    .map(([domain, port]) => `${domain}=smtp:[127.0.0.1]:${port}`)
    .join(', ');
  writeFileSync(
    join(dir, 'main.cf'),
    [
      'compatibility_level = 3.6',
      `queue_directory = ${queue}`,
      `data_directory = ${data}`,
      'mail_owner = postfix',
      'setgid_group = postdrop',
      'myhostname = postfix.tern.test',
      'mydomain = tern.test',
      'myorigin = tern.test',
      'mydestination =',
      'local_recipient_maps =',
      'local_transport = error:no local delivery',
      'alias_maps =',
      'alias_database =',
      'inet_interfaces = 127.0.0.1',
      'inet_protocols = ipv4',
      'mynetworks = 127.0.0.0/8',
      'smtpd_relay_restrictions = permit_mynetworks, reject',
      'smtp_dns_support_level = disabled',
      `transport_maps = inline:{ ${transports} }`,
      `maillog_file = ${maillog}`,
      `maillog_file_prefixes = ${dir}`,
      'queue_run_delay = 1s',
      'minimal_backoff_time = 1s',
      'maximal_backoff_time = 2s',
      `delay_warning_time = ${opts.delayWarning ?? '1s'}`,
      'smtp_connect_timeout = 5s',
      'daemon_directory = /usr/lib/postfix/sbin',
      'shlib_directory = /usr/lib/postfix',
      'meta_directory = /etc/postfix',
      '',
    ].join('\n'),
  );
  // Every service unchrooted (`n` in the 5th column): nothing to copy into a jail.
  writeFileSync(
    join(dir, 'master.cf'),
    [
      `127.0.0.1:${opts.port} inet n - n - - smtpd`,
      'pickup    unix n - n 60 1 pickup',
      'cleanup   unix n - n - 0 cleanup',
      'qmgr      unix n - n 300 1 qmgr',
      'rewrite   unix - - n - - trivial-rewrite',
      'bounce    unix - - n - 0 bounce',
      'defer     unix - - n - 0 bounce',
      'trace     unix - - n - 0 bounce',
      'verify    unix - - n - 1 verify',
      'flush     unix n - n 1000? 0 flush',
      'proxymap  unix - - n - - proxymap',
      'smtp      unix - - n - - smtp',
      'relay     unix - - n - - smtp',
      'showq     unix n - n - - showq',
      'error     unix - - n - - error',
      'retry     unix - - n - - error',
      'discard   unix - - n - - discard',
      'anvil     unix - - n - 1 anvil',
      'scache    unix - - n - 1 scache',
      'postlog   unix-dgram n - n - 1 postlogd',
      '',
    ].join('\n'),
  );
  const log = () => readFileSync(maillog, 'utf8');
  try {
    postfix(dir, 'check'); // creates the queue directories
    // The ownership Postfix's own set-permissions gives them (postfix-files).
    const postdrop = gid('postdrop');
    chownSync(join(queue, 'maildrop'), uid('postfix'), postdrop);
    chmodSync(join(queue, 'maildrop'), 0o730);
    chownSync(join(queue, 'public'), uid('postfix'), postdrop);
    chmodSync(join(queue, 'public'), 0o710);
    postfix(dir, 'start');
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(
      `postfix did not start: ${error instanceof Error ? error.message : String(error)}\n${log()}`,
    );
  }
  // The watchdog: outlives this process (detached) and stops Postfix once this process is gone.
  const watchdog = spawn(
    'bash',
    [
      '-c',
      'while kill -0 "$1" 2>/dev/null && [ "$SECONDS" -lt "$2" ]; do sleep 1; done; ' +
        '"$3" -c "$4" stop >/dev/null 2>&1 || "$3" -c "$4" abort >/dev/null 2>&1; rm -rf "$4"',
      'postfix-watchdog',
      String(process.pid),
      String(opts.maxLifetimeSeconds ?? 600),
      POSTFIX,
      dir,
    ],
    { detached: true, stdio: 'ignore' },
  );
  watchdog.unref();
  return {
    dir,
    log,
    async stop() {
      const pidFile = join(queue, 'pid', 'master.pid');
      const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : Number.NaN;
      try {
        postfix(dir, 'stop');
      } catch {
        postfix(dir, 'abort');
      }
      // `postfix stop` signals the master; wait until it is gone (≤ 10 s, then SIGKILL).
      const alive = () => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      for (let i = 0; Number.isInteger(pid) && pid > 0 && alive() && i < 100; i++)
        await new Promise((r) => setTimeout(r, 100));
      if (Number.isInteger(pid) && pid > 0 && alive()) process.kill(pid, 'SIGKILL');
      if (watchdog.pid !== undefined) {
        try {
          process.kill(watchdog.pid);
        } catch {
          // already gone
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
