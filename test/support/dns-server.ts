// A real DNS server in the test process (SPEC §20's tests): dns2's UDP server on a loopback port,
// answering from records the test sets. Tern's checker and mailauth's verifier both resolve
// through it (`servers` / `resolver`), exactly as they would through a real one.
import { Resolver } from 'node:dns/promises';
import type { AddressInfo } from 'node:net';
import dns2 from 'dns2';

const { Packet } = dns2;

type Answer = { type: 'TXT'; value: string } | { type: 'MX'; exchange: string; priority: number };

export interface TestDnsServer {
  /** `127.0.0.1:<port>`: what DNS_SERVERS takes. */
  readonly server: string;
  /** Publishes a TXT record (a value over 255 bytes is split into strings, as DNS providers do). */
  txt(name: string, value: string): void;
  mx(name: string, exchange: string, priority?: number): void;
  /** Removes every record at a name (or of one type there). */
  remove(name: string, type?: 'TXT' | 'MX'): void;
  /** Answers SERVFAIL for everything until `healthy()` (a resolver outage). */
  fail(): void;
  healthy(): void;
  /** Queries answered so far. */
  readonly queries: number;
  /** A resolver function for mailauth (`dns.promises.resolve` shaped) pointed at this server. */
  resolve(name: string, type: string): Promise<unknown>;
  close(): Promise<void>;
}

/** ≤ 255-byte character-strings (RFC 1035 §3.3.14): one TXT record, several strings. */
function chunks(value: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < value.length; i += 255) out.push(value.slice(i, i + 255));
  return out.length > 0 ? out : [''];
}

export async function startTestDnsServer(): Promise<TestDnsServer> {
  const zone = new Map<string, Answer[]>();
  let failing = false;
  let queries = 0;
  const key = (name: string) => name.toLowerCase().replace(/\.$/, '');

  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      queries++;
      const response = Packet.createResponseFromRequest(request);
      const question = request.questions[0];
      if (failing || !question) {
        response.header.rcode = Packet.RCODE.SERVFAIL;
        send(response);
        return;
      }
      const answers = zone.get(key(question.name));
      if (!answers) {
        response.header.rcode = Packet.RCODE.NXDOMAIN;
        send(response);
        return;
      }
      for (const a of answers) {
        if (a.type === 'TXT' && question.type === Packet.TYPE.TXT)
          response.answers.push({
            name: question.name,
            type: Packet.TYPE.TXT,
            class: Packet.CLASS.IN,
            ttl: 1,
            data: chunks(a.value),
          } as never);
        if (a.type === 'MX' && question.type === Packet.TYPE.MX)
          response.answers.push({
            name: question.name,
            type: Packet.TYPE.MX,
            class: Packet.CLASS.IN,
            ttl: 1,
            exchange: a.exchange,
            priority: a.priority,
          } as never);
      }
      // A name with records of other types only: NOERROR with no answer (NODATA).
      send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = (addresses.udp as AddressInfo | undefined)?.port;
  if (port === undefined) throw new Error('the test DNS server did not bind');
  const address = `127.0.0.1:${port}`;
  const resolver = new Resolver({ timeout: 1_000, tries: 1 });
  resolver.setServers([address]);

  const add = (name: string, answer: Answer) => zone.set(key(name), [...(zone.get(key(name)) ?? []), answer]);
  return {
    server: address,
    txt: (name, value) => add(name, { type: 'TXT', value }),
    mx: (name, exchange, priority = 10) => add(name, { type: 'MX', exchange, priority }),
    remove(name, type) {
      const left = type ? (zone.get(key(name)) ?? []).filter((a) => a.type !== type) : [];
      if (left.length > 0) zone.set(key(name), left);
      else zone.delete(key(name));
    },
    fail: () => {
      failing = true;
    },
    healthy: () => {
      failing = false;
    },
    get queries() {
      return queries;
    },
    resolve: (name, type) => resolver.resolve(name, type),
    close: () => server.close(),
  };
}
