/**
 * An entity's config znode (`/config/users/alice`, `/config/groups/g`): Kafka's
 * `{"version":1,"config":{...}}`, created on its first write.
 */
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { NoNodeError } from "../zookeeper/zookeeper-errors.ts";
import { decodeEntityConfig, encodeEntityConfig } from "./kafka-znodes.ts";

export async function readEntityConfig(
  zk: ZooKeeperClient,
  path: string,
): Promise<Record<string, string>> {
  try {
    const { data } = await zk.getData(path);
    return decodeEntityConfig(path, data);
  } catch (error) {
    if (error instanceof NoNodeError) return {};
    throw error;
  }
}

export async function writeEntityConfig(
  zk: ZooKeeperClient,
  path: string,
  configs: Readonly<Record<string, string>>,
): Promise<void> {
  const data = encodeEntityConfig(configs);
  try {
    await zk.setData(path, data);
  } catch (error) {
    if (!(error instanceof NoNodeError)) throw error;
    await zk.create(path, data, { createParents: true });
  }
}
