import type { PartitionMetadata } from 'kafkajs';
import { kafkajs } from './kafkajs-module.js';

/**
 * The partition of a key: kafkajs's default partitioner (murmur2 of the key, as the Java client)
 * over the topic's `count` partitions, the one a producer without an explicit partition picks, so
 * keys stay where earlier versions put them. The count is read at start: partitions an operator
 * adds take effect at the next start (they move keys to other partitions anyway).
 */
export function keyPartitioner(topic: string, count: number): (key: string) => number {
  if (!Number.isInteger(count) || count < 1) throw new Error(`kafka topic ${topic} has no partitions`);
  const pick = kafkajs().Partitioners.DefaultPartitioner();
  const partitionMetadata: PartitionMetadata[] = Array.from({ length: count }, (_, partitionId) => ({
    partitionErrorCode: 0,
    partitionId,
    leader: 0,
    replicas: [0],
    isr: [0],
    offlineReplicas: [],
  }));
  return (key) => pick({ topic, partitionMetadata, message: { key, value: null } });
}
