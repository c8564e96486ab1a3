/**
 * The inbound bench's message parsed for the store, in process, many times (issue 43): CPU µs per
 * parse of mailparser's streams (`parseStreamed`) against postal-mime's whole-buffer parse in
 * mailparser's shape (`parseSimple`), interleaved rounds; the figures in docs/inbound.md, "Two
 * parsers, one answer".
 *   npx tsx bench/experiments/parse-cpu.ts [parses=3000] [rounds=4]
 */
import { parseSimple, parseStreamed, type RawMessage } from '@tern/inbound';
import { inboundMessage } from '../lib/inbound-message.js';

const PARSES = Number(process.argv[2] ?? 3000);
const ROUNDS = Number(process.argv[3] ?? 4);

// The message of bench/benches/inbound.ts.
const message = (i: number): RawMessage => {
  const raw = Buffer.from(inboundMessage('support@in.bench.test', 'parse', i));
  return { chunks: [raw], size: raw.length };
};

const parsers = {
  'mailparser (parseStreamed)': (raw: RawMessage) => parseStreamed(raw),
  'postal-mime (parseSimple)': async (raw: RawMessage) => {
    const parsed = await parseSimple(raw);
    if (!parsed) throw new Error('parseSimple declined the bench message');
    return parsed;
  },
};

for (const parse of Object.values(parsers)) for (let i = 0; i < 300; i++) await parse(message(i));
for (let round = 1; round <= ROUNDS; round++) {
  const line: string[] = [];
  for (const [name, parse] of Object.entries(parsers)) {
    const cpu = process.cpuUsage();
    for (let i = 0; i < PARSES; i++) await parse(message(i));
    const used = process.cpuUsage(cpu);
    line.push(`${name} ${Math.round((used.user + used.system) / PARSES)} µs`);
  }
  console.log(`round ${round}: ${line.join(', ')} of CPU per parse`);
}
