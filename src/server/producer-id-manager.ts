/**
 * Hands out producer ids for InitProducerId, unique across restarts and, in ZooKeeper mode,
 * across the brokers of a cluster. Ids are taken in blocks of 1000 (Kafka's
 * ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE); a block is recorded durably before its first id is
 * given out, so a crash skips the rest of a block but never reuses an id.
 *
 * Where the latest block is recorded, in Kafka's JSON either way
 * (`{"version":1,"broker":N,"block_start":"0","block_end":"999"}`, ProducerIdBlockZNode):
 * - ZooKeeper mode: the znode `/latest_producer_id_block`, claimed with a conditional setData on
 *   the version read, retried when another broker won the race (ZkProducerIdManager).
 * - Embedded mode: the file `latest_producer_id_block` in the first log dir, replaced atomically.
 */
import * as path from "node:path";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { readFileIfExists, writeFileAtomically } from "../storage/durable-file.ts";
import { assert } from "../util/assert.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { BadVersionError, NodeExistsError, NoNodeError } from "../zookeeper/zookeeper-errors.ts";

export const PRODUCER_ID_BLOCK_SIZE = 1000n;
export const PRODUCER_ID_BLOCK_ZNODE = "/latest_producer_id_block";
export const PRODUCER_ID_BLOCK_FILE = "latest_producer_id_block";
const BLOCK_VERSION = 1;
/** Lost conditional writes in a row before giving up (other brokers allocating at once). */
const ZOOKEEPER_ATTEMPTS_MAX = 10;
const LONG_MAX = (1n << 63n) - 1n;

export interface ProducerIdBlock {
  readonly brokerId: number;
  readonly firstId: bigint;
  readonly lastId: bigint;
}

/** Where blocks are claimed; `claimNext` records and returns the block after the latest one. */
export interface ProducerIdBlockStore {
  claimNext(brokerId: number): Promise<ProducerIdBlock>;
}

export class ProducerIdManager {
  private block: ProducerIdBlock | null = null;
  private nextId = 0n;
  private claiming: Promise<void> | null = null;

  constructor(
    private readonly brokerId: number,
    private readonly store: ProducerIdBlockStore,
  ) {}

  /**
   * The next unused producer id. Throws KafkaError COORDINATOR_LOAD_IN_PROGRESS when no block
   * can be claimed right now (clients retry it, as with Kafka's RPCProducerIdManager).
   */
  async generateProducerId(): Promise<bigint> {
    // Each pass either returns an id or waits for a claim, which fills the block or throws.
    for (;;) {
      const block = this.block;
      if (block !== null && this.nextId <= block.lastId) {
        const id = this.nextId;
        this.nextId += 1n;
        assert(id >= block.firstId, `producer id ${id} below its block ${block.firstId}`);
        return id;
      }
      this.claiming ??= this.claimBlock().finally(() => {
        this.claiming = null;
      });
      await this.claiming;
    }
  }

  private async claimBlock(): Promise<void> {
    let block: ProducerIdBlock;
    try {
      block = await this.store.claimNext(this.brokerId);
    } catch (error) {
      if (error instanceof KafkaError) throw error;
      throw new KafkaError(
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        `Producer ID block is not available yet: ${String(error)}`,
        { cause: error },
      );
    }
    assert(block.lastId >= block.firstId, `empty producer id block ${block.firstId}`);
    assert(this.block === null || block.firstId > this.block.lastId, "producer id blocks overlap");
    this.block = block;
    this.nextId = block.firstId;
  }
}

export function encodeBlock(block: ProducerIdBlock): Uint8Array {
  return new TextEncoder().encode(
    JSON.stringify({
      version: BLOCK_VERSION,
      broker: block.brokerId,
      block_start: block.firstId.toString(),
      block_end: block.lastId.toString(),
    }),
  );
}

/** The block after `data` (the latest recorded block), or the first one when there is none. */
export function nextBlockAfter(data: Uint8Array | null, brokerId: number): ProducerIdBlock {
  let firstId = 0n;
  if (data !== null && data.length > 0) {
    const parsed = JSON.parse(new TextDecoder().decode(data)) as { block_end?: unknown };
    if (typeof parsed.block_end !== "string" || !/^\d+$/.test(parsed.block_end)) {
      throw new Error(`producer id block without a block_end: ${new TextDecoder().decode(data)}`);
    }
    firstId = BigInt(parsed.block_end) + 1n;
  }
  if (firstId > LONG_MAX - PRODUCER_ID_BLOCK_SIZE) {
    throw new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "Have exhausted all producerIds.");
  }
  return { brokerId, firstId, lastId: firstId + PRODUCER_ID_BLOCK_SIZE - 1n };
}

/** Embedded mode: the latest block in a file, replaced atomically (write, fsync, rename). */
export class LocalProducerIdBlockStore implements ProducerIdBlockStore {
  readonly filePath: string;

  constructor(logDir: string) {
    this.filePath = path.join(logDir, PRODUCER_ID_BLOCK_FILE);
  }

  claimNext(brokerId: number): Promise<ProducerIdBlock> {
    const block = nextBlockAfter(readFileIfExists(this.filePath), brokerId);
    writeFileAtomically(this.filePath, encodeBlock(block));
    return Promise.resolve(block);
  }
}

/** ZooKeeper mode: Kafka's `/latest_producer_id_block`, claimed by conditional setData. */
export class ZooKeeperProducerIdBlockStore implements ProducerIdBlockStore {
  constructor(private readonly zk: ZooKeeperClient) {}

  async claimNext(brokerId: number): Promise<ProducerIdBlock> {
    for (let attempt = 0; attempt < ZOOKEEPER_ATTEMPTS_MAX; attempt++) {
      const current = await this.read();
      const block = nextBlockAfter(current?.data ?? null, brokerId);
      try {
        if (current === null) {
          await this.zk.create(PRODUCER_ID_BLOCK_ZNODE, encodeBlock(block));
        } else {
          await this.zk.setData(PRODUCER_ID_BLOCK_ZNODE, encodeBlock(block), {
            version: current.version,
          });
        }
        return block;
      } catch (error) {
        if (!(error instanceof BadVersionError) && !(error instanceof NodeExistsError)) throw error;
      }
    }
    throw new KafkaError(
      ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
      `${ZOOKEEPER_ATTEMPTS_MAX} attempts to claim a producer id block lost to other brokers`,
    );
  }

  private async read(): Promise<{ data: Uint8Array; version: number } | null> {
    try {
      const { data, stat } = await this.zk.getData(PRODUCER_ID_BLOCK_ZNODE);
      return { data, version: stat.version };
    } catch (error) {
      if (error instanceof NoNodeError) return null;
      throw error;
    }
  }
}

/** The manager for this broker: ZooKeeper's block when there is a session, else the local file. */
export function openProducerIdManager(
  brokerId: number,
  zooKeeper: ZooKeeperClient | null,
  firstLogDir: string,
): ProducerIdManager {
  const store =
    zooKeeper !== null
      ? new ZooKeeperProducerIdBlockStore(zooKeeper)
      : new LocalProducerIdBlockStore(path.resolve(firstLogDir));
  return new ProducerIdManager(brokerId, store);
}
