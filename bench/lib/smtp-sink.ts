/**
 * A sink SMTP relay in its own process (the SMTP benches' far end): `smtp-server` accepting every
 * message, no TLS, no auth, bodies read and dropped. Its own process, so the relay's CPU is not
 * the bench's. Prints {"smtpPort":N,"httpPort":M} once listening on 127.0.0.1;
 * `GET http://127.0.0.1:M/` answers {"messages":…,"connections":…}; closes on SIGTERM.
 *   node --import tsx bench/lib/smtp-sink.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

let messages = 0;
let connections = 0;
const smtp = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  // The pools of both runs open their connections at once.
  maxClients: 1000,
  onConnect(_session, callback) {
    connections++;
    callback();
  },
  onData(stream, _session, callback) {
    stream.on('data', () => undefined);
    stream.on('end', () => {
      messages++;
      callback();
    });
  },
});
// A client that goes away mid-session (a pool closed, a bench killed) is no reason to stop.
smtp.on('error', () => undefined);
const http = createServer((_req, res) => {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ messages, connections }));
});
await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', () => r()));
await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
process.stdout.write(
  `${JSON.stringify({
    smtpPort: (smtp.server.address() as AddressInfo).port,
    httpPort: (http.address() as AddressInfo).port,
  })}\n`,
);
process.once('SIGTERM', () => {
  http.close();
  smtp.close(() => process.exit(0));
});
