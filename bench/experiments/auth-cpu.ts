/**
 * The verdicts of the inbound bench's message (unsigned, ≈ 6 KB), in process, many times (issue 43):
 * CPU µs per `verdictsOf` when mailauth reads the header block alone (what an unsigned message
 * gets, `authInput`) against the whole message (what it read before, and still reads for signed
 * mail: here forced by a first chunk that ends before the header block does), interleaved rounds.
 *   npx tsx bench/experiments/auth-cpu.ts [messages=3000] [rounds=4]
 */
import { dnsResolverOf, type RawMessage, verdictsOf } from '@tern/inbound';
import { startTestDnsServer } from '../../test/support/dns-server.js';
import { inboundMessage } from '../lib/inbound-message.js';

const MESSAGES = Number(process.argv[2] ?? 3000);
const ROUNDS = Number(process.argv[3] ?? 4);

// The tests' DNS server in this process, through the listener's cached resolver (`dnsResolverOf`):
// after the first message every lookup is a cache hit, as for a sender's every later message.
const dns = await startTestDnsServer();
dns.txt('sender.test', 'v=spf1 ip4:127.0.0.1 -all');
dns.txt('_dmarc.sender.test', 'v=DMARC1; p=none');
const resolve = dnsResolverOf([dns.server]);
const facts = { clientIp: '127.0.0.1', helo: 'client.test', sender: 'ann@sender.test', mta: 'mx.bench.test' };

const raw = (i: number) => Buffer.from(inboundMessage('support@in.bench.test', 'auth', i));
const readings = {
  'header block': (b: Buffer): RawMessage => ({ chunks: [b], size: b.length }),
  'whole message': (b: Buffer): RawMessage => ({
    chunks: [b.subarray(0, 16), b.subarray(16)],
    size: b.length,
  }),
};

for (const read of Object.values(readings)) {
  const v = await verdictsOf(read(raw(0)), facts, resolve);
  if (v.spf !== 'pass' || v.dmarc !== 'pass') throw new Error(`unexpected verdicts ${JSON.stringify(v)}`);
  for (let i = 0; i < 300; i++) await verdictsOf(read(raw(i)), facts, resolve);
}
for (let round = 1; round <= ROUNDS; round++) {
  const line: string[] = [];
  for (const [name, read] of Object.entries(readings)) {
    const cpu = process.cpuUsage();
    for (let i = 0; i < MESSAGES; i++) await verdictsOf(read(raw(i)), facts, resolve);
    const used = process.cpuUsage(cpu);
    line.push(`${name} ${Math.round((used.user + used.system) / MESSAGES)} µs`);
  }
  console.log(`round ${round}: ${line.join(', ')} of CPU per message`);
}
await dns.close();
