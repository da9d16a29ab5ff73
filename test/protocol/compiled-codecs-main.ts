/**
 * Entry point compiled by compression.test.ts with `bun build --compile` and run from a
 * directory without node_modules: proves every codec (including the napi-rs snappy and lz4
 * addons) is embedded in the standalone binary. Prints one JSON line of per-codec results.
 */
import { CompressionType } from "../../src/protocol/compression.ts";
import {
  buildRecordBatch,
  decodeRecords,
  verifyBatchCrc,
} from "../../src/protocol/record-batch.ts";

const line = '{"level":"info","msg":"compiled binary round trip"}\n';
const value = new TextEncoder().encode(line.repeat(200));
const results: Record<string, boolean | string> = {};
for (const [name, codec] of Object.entries(CompressionType)) {
  try {
    const batch = buildRecordBatch([{ value }, { value: null }], { compression: codec });
    const records = decodeRecords(batch);
    results[name] =
      verifyBatchCrc(batch) &&
      records.length === 2 &&
      Buffer.compare(records[0].value!, value) === 0 &&
      records[1].value === null;
  } catch (e) {
    results[name] = String(e);
  }
}
console.log(JSON.stringify({ standalone: Bun.isStandaloneExecutable, results }));
process.exit(Object.values(results).every((ok) => ok === true) ? 0 : 1);
