import net from 'node:net';

/**
 * A raw SMTP client over a real socket, for abuse tests: it sends whatever it is told (broken
 * commands, pipelined batches, one byte at a time) and records every reply line and when the
 * server closed the connection.
 */
export interface RawSmtp {
  socket: net.Socket;
  /** Every reply line so far. */
  lines: string[];
  /** Set once the server closed (or reset) the connection: ms since connect. */
  closedAfterMs: number | null;
  /** Resolves with the reply lines once `count` final lines (`NNN ` form) arrived, or the socket closed. */
  replies(count: number, timeoutMs?: number): Promise<string[]>;
  /** Writes `line` + CRLF and resolves with its final reply line (null if the connection closed first). */
  command(line: string, timeoutMs?: number): Promise<string | null>;
  /** Resolves once the server closed the connection (rejects after `timeoutMs`). */
  closed(timeoutMs?: number): Promise<number>;
  end(): void;
}

export function rawSmtp(port: number, host = '127.0.0.1'): Promise<RawSmtp> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(port, host);
    const lines: string[] = [];
    let buffer = '';
    const waiters = new Set<() => void>();
    const wake = () => {
      for (const w of [...waiters]) w();
    };
    const client: RawSmtp = {
      socket,
      lines,
      closedAfterMs: null,
      replies(count, timeoutMs = 10_000) {
        return new Promise((res, rej) => {
          const check = () => {
            const finals = lines.filter((l) => /^\d{3}( |$)/.test(l));
            if (finals.length >= count || client.closedAfterMs !== null) {
              waiters.delete(check);
              clearTimeout(timer);
              res(lines.slice());
            }
          };
          const timer = setTimeout(() => {
            waiters.delete(check);
            rej(new Error(`no ${count} replies within ${timeoutMs} ms: ${JSON.stringify(lines)}`));
          }, timeoutMs);
          waiters.add(check);
          check();
        });
      },
      async command(line, timeoutMs = 10_000) {
        const before = lines.filter((l) => /^\d{3} /.test(l)).length;
        socket.write(`${line}\r\n`);
        const after = await client.replies(before + 1, timeoutMs);
        return after.filter((l) => /^\d{3} /.test(l))[before] ?? null;
      },
      closed(timeoutMs = 10_000) {
        return new Promise((res, rej) => {
          const check = () => {
            if (client.closedAfterMs !== null) {
              waiters.delete(check);
              clearTimeout(timer);
              res(client.closedAfterMs);
            }
          };
          const timer = setTimeout(() => {
            waiters.delete(check);
            rej(new Error(`connection still open after ${timeoutMs} ms`));
          }, timeoutMs);
          waiters.add(check);
          check();
        });
      },
      end() {
        socket.destroy();
      },
    };
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      let i = buffer.indexOf('\r\n');
      while (i >= 0) {
        lines.push(buffer.slice(0, i));
        buffer = buffer.slice(i + 2);
        i = buffer.indexOf('\r\n');
      }
      wake();
    });
    const onClose = () => {
      if (client.closedAfterMs === null) client.closedAfterMs = Date.now() - started;
      wake();
    };
    socket.on('close', onClose);
    socket.on('end', onClose);
    socket.on('error', () => undefined);
    socket.once('connect', () => resolve(client));
    socket.once('error', reject);
  });
}
