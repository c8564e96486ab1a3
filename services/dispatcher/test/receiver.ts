// A real webhook receiver on loopback. It verifies every request with the reference
// `standardwebhooks` package (never the project's own code) against the secrets it is given.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
  /** Which of the receiver's known secrets verified it (by name). */
  verifiedBy: string[];
}

export type Reply =
  | { status: number; body?: string; headers?: Record<string, string>; delayMs?: number }
  | 'hang';

export interface Receiver {
  url(path: string): string;
  received: Received[];
  /** Secrets to verify with, by name. */
  secrets: Map<string, string>;
  /** Decides the answer of a request; default 200. */
  reply: (request: Received, nthOnPath: number) => Reply;
  on(path: string): Received[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const hanging = new Set<ServerResponse>();
  const receiver: Receiver = {
    url: () => '',
    received: [],
    secrets: new Map(),
    reply: () => ({ status: 200 }),
    on: (path) => receiver.received.filter((r) => r.path === path),
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const verifiedBy: string[] = [];
      for (const [name, secret] of receiver.secrets) {
        try {
          new Webhook(secret).verify(body, req.headers as Record<string, string>);
          verifiedBy.push(name);
        } catch {
          // not this secret
        }
      }
      const entry: Received = {
        path: req.url ?? '/',
        headers: req.headers,
        body,
        receivedAt: Date.now(),
        verifiedBy,
      };
      receiver.received.push(entry);
      const reply = receiver.reply(entry, receiver.on(entry.path).length);
      if (reply === 'hang') {
        hanging.add(res);
        return;
      }
      const send = () => {
        res.writeHead(reply.status, reply.headers ?? {});
        res.end(reply.body ?? '');
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  receiver.url = (path) => `http://127.0.0.1:${port}${path}`;
  return receiver;
}
