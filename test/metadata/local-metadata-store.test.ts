import { afterEach, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { LocalMetadataStore } from "../../src/metadata/local-metadata-store.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "quill-meta-"));
  dirs.push(d);
  return d;
};

test("topics and cluster id survive reopening", async () => {
  const dir = tempDir();
  const store = LocalMetadataStore.open(dir);
  expect(store.clusterId).toHaveLength(22);
  await store.createTopic({
    name: "a",
    topicIdHex: "00".repeat(16),
    assignment: [[0], [0]],
    configs: { "retention.ms": "5" },
  });
  await store.createTopic({
    name: "b",
    topicIdHex: "11".repeat(16),
    assignment: [[0]],
    configs: {},
  });
  await store.deleteTopic("b");
  const again = LocalMetadataStore.open(dir);
  expect(again.clusterId).toBe(store.clusterId);
  expect(again.topics().map((t) => t.name)).toEqual(["a"]);
  expect(again.topic("a")?.configs["retention.ms"]).toBe("5");
  expect(again.topic("a")?.assignment).toEqual([[0], [0]]);
});

test("a leftover temp file from a crash mid-write does not replace the real file", async () => {
  const dir = tempDir();
  const store = LocalMetadataStore.open(dir);
  await store.createTopic({
    name: "kept",
    topicIdHex: "22".repeat(16),
    assignment: [[0]],
    configs: {},
  });
  fs.writeFileSync(path.join(dir, "__quill_metadata.json.tmp"), "{torn");
  expect(LocalMetadataStore.open(dir).topic("kept")).toBeDefined();
});
