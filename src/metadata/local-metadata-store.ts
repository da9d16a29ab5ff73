import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { fsyncDirectory } from "../storage/durable-file.ts";
import { assert } from "../util/assert.ts";
import { type MetadataStore, TOPICS_MAX, type TopicRecord } from "./metadata-store.ts";

interface MetadataFile {
  readonly version: 1;
  readonly clusterId: string;
  readonly topics: TopicRecord[];
}

/**
 * The embedded default's metadata: one JSON file, `<dataDir>/__quill_metadata.json`, rewritten
 * whole on every change through write-temp, fsync, rename, so a crash leaves either the old or
 * the new version and never a torn one. Topic changes are rare (admin operations), so rewriting
 * the whole file is cheaper to reason about than a log and fast enough.
 */
export class LocalMetadataStore implements MetadataStore {
  private readonly byName = new Map<string, TopicRecord>();

  private constructor(
    private readonly filePath: string,
    readonly clusterId: string,
    topics: readonly TopicRecord[],
  ) {
    for (const t of topics) this.byName.set(t.name, t);
  }

  static open(dataDir: string): LocalMetadataStore {
    fs.mkdirSync(dataDir, { recursive: true });
    const filePath = path.join(dataDir, "__quill_metadata.json");
    if (!fs.existsSync(filePath)) {
      const store = new LocalMetadataStore(filePath, newClusterId(), []);
      store.persist();
      return store;
    }
    const parsed = JSON.parse(fs.readFileSync(filePath, "utf8")) as MetadataFile;
    assert(parsed.version === 1, `unknown metadata file version ${parsed.version} in ${filePath}`);
    return new LocalMetadataStore(filePath, parsed.clusterId, parsed.topics);
  }

  topics(): readonly TopicRecord[] {
    return [...this.byName.values()];
  }

  topic(name: string): TopicRecord | undefined {
    return this.byName.get(name);
  }

  /** Reassignment needs a cluster: never in the embedded default. */
  isReassigning(): boolean {
    return false;
  }

  async createTopic(topic: TopicRecord): Promise<void> {
    assert(!this.byName.has(topic.name), `topic ${topic.name} already exists`);
    assert(this.byName.size < TOPICS_MAX, `topic limit ${TOPICS_MAX} reached`);
    this.byName.set(topic.name, topic);
    this.persist();
  }

  async updateTopic(topic: TopicRecord): Promise<void> {
    assert(this.byName.has(topic.name), `topic ${topic.name} does not exist`);
    this.byName.set(topic.name, topic);
    this.persist();
  }

  async deleteTopic(name: string): Promise<void> {
    this.byName.delete(name);
    this.persist();
  }

  async close(): Promise<void> {}

  private persist(): void {
    const file: MetadataFile = {
      version: 1,
      clusterId: this.clusterId,
      topics: this.topics() as TopicRecord[],
    };
    const tmp = `${this.filePath}.tmp`;
    const fd = fs.openSync(tmp, "w");
    try {
      fs.writeSync(fd, JSON.stringify(file));
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, this.filePath);
    // The rename must be durable before CreateTopics answers: the topic's logs are created
    // without syncs and come back from this file after a crash (UnifiedLog.load).
    fsyncDirectory(path.dirname(this.filePath));
  }
}

/** Kafka cluster ids are 16 random bytes in URL-safe base64 without padding (22 characters). */
function newClusterId(): string {
  return randomBytes(16).toString("base64url");
}
