/**
 * `manifest.json` in an export's directory: every complete file with its partition, offset
 * range, record count, bytes and time range. It is rewritten durably after each file, before
 * the group's offsets are committed, so it always lists exactly the files that are complete;
 * a file in the directory that it does not list is a leftover of a killed run and is removed.
 */
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join, relative as relativePath } from "node:path";
import { UsageError } from "./args.ts";
import { writeDurably } from "./durable-file.ts";
import type { FileWindow } from "./export-window.ts";
import type { ExportFormat } from "./export-writers.ts";

export interface ManifestFile {
  readonly topic: string;
  readonly partition: number;
  /** Relative to the export directory. */
  readonly file: string;
  readonly firstOffset: number;
  readonly lastOffset: number;
  readonly records: number;
  readonly bytes: number;
  readonly minTimestamp: number;
  readonly maxTimestamp: number;
  /** With `--file-window`: the window (epoch ms, end exclusive) every record's time is in. */
  readonly windowStart?: number;
  readonly windowEnd?: number;
}

interface ManifestData {
  readonly version: 1;
  readonly format: ExportFormat;
  /** Absent in manifests written before `--file-window` existed: none. */
  readonly fileWindow?: FileWindow;
  files: ManifestFile[];
}

export const MANIFEST_NAME = "manifest.json";

export class ExportManifest {
  private writing: Promise<void> = Promise.resolve();

  private constructor(
    readonly dir: string,
    private readonly data: ManifestData,
  ) {}

  static async open(
    dir: string,
    format: ExportFormat,
    fileWindow: FileWindow,
  ): Promise<ExportManifest> {
    const file = Bun.file(join(dir, MANIFEST_NAME));
    if (!(await file.exists())) {
      return new ExportManifest(dir, { version: 1, format, fileWindow, files: [] });
    }
    const data = (await file.json()) as ManifestData;
    if (data.version !== 1 || !Array.isArray(data.files)) {
      throw new UsageError(`${join(dir, MANIFEST_NAME)} is not a quill export manifest`);
    }
    if (data.format !== format) {
      throw new UsageError(`${dir} holds a ${data.format} export; use --format ${data.format}`);
    }
    const window = data.fileWindow ?? "none";
    if (window !== fileWindow) {
      throw new UsageError(`${dir} holds an export with --file-window ${window}; use that`);
    }
    return new ExportManifest(dir, data);
  }

  get files(): readonly ManifestFile[] {
    return this.data.files;
  }

  /** The offset after the last listed file of a partition, or null when none is listed. */
  nextOffset(topic: string, partition: number): number | null {
    let next: number | null = null;
    for (const f of this.data.files) {
      if (
        f.topic === topic &&
        f.partition === partition &&
        (next === null || f.lastOffset >= next)
      ) {
        next = f.lastOffset + 1;
      }
    }
    return next;
  }

  /** Removes files under `topic`'s directory (windows included) that the manifest does not list. */
  removeUnlisted(topic: string): string[] {
    const topicDir = join(this.dir, topic);
    if (!existsSync(topicDir)) return [];
    const listed = new Set(this.data.files.map((f) => f.file));
    const removed: string[] = [];
    for (const entry of readdirSync(topicDir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const relative = relativePath(this.dir, join(entry.parentPath, entry.name));
      if (listed.has(relative)) continue;
      rmSync(join(this.dir, relative), { force: true });
      removed.push(relative);
    }
    return removed;
  }

  /** Writes the manifest as it is (an export that found nothing to copy still leaves one). */
  save(): Promise<void> {
    return this.update(() => {});
  }

  /** Adds a complete file and rewrites the manifest durably (one write at a time). */
  add(entry: ManifestFile): Promise<void> {
    return this.update(() => this.data.files.push(entry));
  }

  private update(change: () => void): Promise<void> {
    const next = this.writing.then(async () => {
      change();
      this.data.files.sort((a, b) =>
        a.topic === b.topic
          ? a.partition - b.partition || a.firstOffset - b.firstOffset
          : a.topic.localeCompare(b.topic),
      );
      await writeDurably(join(this.dir, MANIFEST_NAME), `${JSON.stringify(this.data, null, 1)}\n`);
    });
    this.writing = next.catch(() => {});
    return next;
  }
}
