/**
 * The files `quill export` writes: JSON lines or Apache Parquet, one file per run of records
 * of one partition. A writer holds one file's records in memory (bounded by the export's
 * per-file record and byte limits) and returns the file's bytes when it is complete, so
 * the file is written, fsynced and renamed in one step (durable-file.ts).
 *
 * Parquet comes from hyparquet-writer: pure JavaScript (no native addon, no WebAssembly file
 * to ship beside the binary), so it works inside `bun build --compile`; see docs/cli.md.
 */
import { parquetWriteBuffer } from "hyparquet-writer";
import type { ConsumedRecord } from "../client/fetched-records.ts";
import { UsageError } from "./args.ts";

export type ExportFormat = "jsonl" | "parquet";
/** How values (and keys) are written: UTF-8 text, base64 bytes, or parsed JSON (values only). */
export type ValueEncoding = "text" | "bytes" | "json";

const decoder = new TextDecoder();

export class InvalidJsonValueError extends UsageError {}

function encodeValue(bytes: Uint8Array | null, as: ValueEncoding, r: ConsumedRecord): unknown {
  if (bytes === null) return null;
  if (as === "bytes") return Buffer.from(bytes).toString("base64");
  const text = decoder.decode(bytes);
  if (as === "text") return text;
  try {
    return JSON.parse(text);
  } catch {
    throw new InvalidJsonValueError(
      `--value-as json: ${r.topic} partition ${r.partition} offset ${r.offset} is not JSON`,
    );
  }
}

const headersOf = (r: ConsumedRecord) =>
  Object.fromEntries(
    r.headers.map((h) => [h.key, h.value === null ? null : decoder.decode(h.value)]),
  );

export interface RecordFileWriter {
  add(r: ConsumedRecord): void;
  readonly records: number;
  /** Record bytes taken in (keys, values, headers), for the per-file size limit. */
  readonly bytes: number;
  /** The complete file. */
  finish(): Uint8Array;
}

class JsonLinesWriter implements RecordFileWriter {
  private readonly lines: string[] = [];
  bytes = 0;

  constructor(
    private readonly keyAs: ValueEncoding,
    private readonly valueAs: ValueEncoding,
  ) {}

  get records(): number {
    return this.lines.length;
  }

  add(r: ConsumedRecord): void {
    this.bytes += (r.key?.length ?? 0) + (r.value?.length ?? 0) + 64;
    this.lines.push(
      JSON.stringify({
        topic: r.topic,
        partition: r.partition,
        offset: Number(r.offset),
        timestamp: r.timestampMs,
        key: encodeValue(r.key, this.keyAs, r),
        value: encodeValue(r.value, this.valueAs, r),
        headers: headersOf(r),
      }),
    );
  }

  finish(): Uint8Array {
    return new TextEncoder().encode(`${this.lines.join("\n")}\n`);
  }
}

class ParquetWriter implements RecordFileWriter {
  private readonly partitions: number[] = [];
  private readonly offsets: bigint[] = [];
  private readonly timestamps: Date[] = [];
  private readonly keys: unknown[] = [];
  private readonly values: unknown[] = [];
  private readonly headers: Record<string, string | null>[] = [];
  private topic = "";
  bytes = 0;

  constructor(
    private readonly keyAs: ValueEncoding,
    private readonly valueAs: ValueEncoding,
  ) {}

  get records(): number {
    return this.offsets.length;
  }

  add(r: ConsumedRecord): void {
    this.bytes += (r.key?.length ?? 0) + (r.value?.length ?? 0) + 32;
    this.topic = r.topic;
    this.partitions.push(r.partition);
    this.offsets.push(r.offset);
    this.timestamps.push(new Date(r.timestampMs));
    this.keys.push(this.keyAs === "bytes" ? r.key : encodeValue(r.key, this.keyAs, r));
    this.values.push(this.valueAs === "bytes" ? r.value : encodeValue(r.value, this.valueAs, r));
    this.headers.push(headersOf(r));
  }

  private static columnType(as: ValueEncoding) {
    return as === "bytes" ? "BYTE_ARRAY" : as === "json" ? "JSON" : "STRING";
  }

  finish(): Uint8Array {
    const buffer = parquetWriteBuffer({
      columnData: [
        {
          name: "topic",
          data: this.offsets.map(() => this.topic),
          type: "STRING",
          nullable: false,
        },
        {
          name: "partition",
          data: Int32Array.from(this.partitions),
          type: "INT32",
          nullable: false,
        },
        { name: "offset", data: BigInt64Array.from(this.offsets), type: "INT64", nullable: false },
        { name: "timestamp", data: this.timestamps, type: "TIMESTAMP", nullable: false },
        { name: "key", data: this.keys, type: ParquetWriter.columnType(this.keyAs) },
        { name: "value", data: this.values, type: ParquetWriter.columnType(this.valueAs) },
        { name: "headers", data: this.headers, type: "JSON" },
      ] as Parameters<typeof parquetWriteBuffer>[0]["columnData"],
      createdBy: "quill export",
    });
    return new Uint8Array(buffer);
  }
}

export function newWriter(
  format: ExportFormat,
  keyAs: ValueEncoding,
  valueAs: ValueEncoding,
): RecordFileWriter {
  return format === "jsonl"
    ? new JsonLinesWriter(keyAs, valueAs)
    : new ParquetWriter(keyAs, valueAs);
}
