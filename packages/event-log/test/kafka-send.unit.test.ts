import type { Producer, ProducerRecord, RecordMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { type PartitionedMessage, sendEvery } from '../src/kafka-send.js';

// What kafkajs 2.2.4's `send` answers when a leadership moved during its retries: the metadata
// of the partitions it wrote, without the others (kafka-send.ts). The real case runs on three
// brokers in test/cluster/kafka-append.cluster.test.ts; this is the check's own logic.
function scripted(answers: ((r: ProducerRecord) => number[])[]) {
  const sent: ProducerRecord[] = [];
  const producer: Pick<Producer, 'send'> = {
    async send(record) {
      sent.push(record);
      const answer = answers[sent.length - 1] ?? ((r: ProducerRecord) => partitionsOf(r));
      return answer(record).map(
        (partition): RecordMetadata => ({ topicName: record.topic, partition, errorCode: 0 }),
      );
    },
  };
  return { producer, sent };
}
const partitionsOf = (r: ProducerRecord) => [...new Set(r.messages.map((m) => m.partition!))];
const messages: PartitionedMessage[] = [0, 1, 2, 0, 1, 2].map((partition, i) => ({
  key: `k${i}`,
  value: `v${i}`,
  partition,
}));
const opts = { topic: 't', timeoutMs: 1000, deadline: Date.now() + 60_000 };

describe('sendEvery', () => {
  it('sends once when every partition is answered', async () => {
    const { producer, sent } = scripted([]);
    await sendEvery(producer, messages, opts);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ topic: 't', acks: -1, timeout: 1000 });
  });

  it('sends again the records of the partitions a send resolved without', async () => {
    const { producer, sent } = scripted([() => [0, 2]]);
    const resent: [number[], number][] = [];
    await sendEvery(producer, messages, { ...opts, onResend: (p, n) => resent.push([p, n]) });
    expect(sent).toHaveLength(2);
    expect(sent[1]!.messages.map((m) => m.key)).toEqual(['k1', 'k4']);
    expect(resent).toEqual([[[1], 2]]);
  });

  it('does not count a partition answered with an error or for another topic', async () => {
    const { producer, sent } = scripted([]);
    producer.send = async (record) => {
      sent.push(record);
      if (sent.length > 1)
        return partitionsOf(record).map((partition) => ({ topicName: 't', partition, errorCode: 0 }));
      return [
        { topicName: 't', partition: 0, errorCode: 0 },
        { topicName: 't', partition: 1, errorCode: 6 },
        { topicName: 'other', partition: 2, errorCode: 0 },
      ];
    };
    await sendEvery(producer, messages, opts);
    expect(sent[1]!.messages.map((m) => m.partition)).toEqual([1, 2, 1, 2]);
  });

  it('rejects, naming the partitions, when sends keep resolving short or past the deadline', async () => {
    const never = scripted(Array.from({ length: 10 }, () => () => [0]));
    await expect(sendEvery(never.producer, messages, opts)).rejects.toThrow(
      /partition\(s\) 1, 2 after 5 send/,
    );
    expect(never.sent).toHaveLength(5);
    const late = scripted([() => [0]]);
    await expect(sendEvery(late.producer, messages, { ...opts, deadline: Date.now() - 1 })).rejects.toThrow(
      /after 1 send/,
    );
  });
});
