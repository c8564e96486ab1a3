import type { Admin } from 'kafkajs';

/**
 * Creates the topic when it is missing. Every start after the first finds it there; asking the
 * broker to create it anyway makes kafkajs log the refusal at error level, so look first (a
 * concurrent creator between the two calls is still fine: createTopics answers false).
 * Without a replication factor: 3 when the cluster has 3 brokers or more, with
 * min.insync.replicas=2 (an acknowledged record, acks=all, is on two brokers at least, and one
 * broker may be lost), else one replica per broker.
 */
export async function ensureTopic(
  admin: Admin,
  topic: string,
  partitions: number,
  replicationFactor?: number,
): Promise<void> {
  if ((await admin.listTopics()).includes(topic)) return;
  const replicas = replicationFactor ?? Math.min(3, (await admin.describeCluster()).brokers.length);
  await admin.createTopics({
    waitForLeaders: true,
    topics: [
      {
        topic,
        numPartitions: partitions,
        replicationFactor: replicas,
        configEntries: replicas >= 3 ? [{ name: 'min.insync.replicas', value: '2' }] : [],
      },
    ],
  });
}
