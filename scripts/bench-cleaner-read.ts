/**
 * How the log cleaner should read segments: Bun.file against node:fs, for its access pattern
 * (sequential 512 KiB chunks of a sealed segment, read by the cleaner's Worker in its own thread
 * through an fd the event loop lends it), and a replica moving between
 * log dirs (1 MiB chunks, replica.fetch.max.bytes). Also checks each reader's bytes against the
 * file, since correctness decides before speed.
 *
 *   bun scripts/bench-cleaner-read.ts [sizeMiB=256] [chunkKiB=512]
 *
 * Prints MB/s per method (median of 3 passes over a file in the page cache).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const sizeBytes = Number(process.argv[2] ?? 256) * 1024 * 1024;
const chunkBytes = Number(process.argv[3] ?? 512) * 1024;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "quill-bench-read-"));
const file = path.join(dir, "00000000000000000000.log");
const data = new Uint8Array(sizeBytes);
for (let i = 0; i < sizeBytes; i += 4096) data.fill((i / 4096) & 255, i, i + 4096);
fs.writeFileSync(file, data);

type Reader = (fd: number, position: number, length: number) => Promise<Uint8Array>;
/** The cleaner Worker's one read buffer, reused for every chunk. */
const reused = new Uint8Array(chunkBytes);
const methods: Record<string, Reader> = {
  "node:fs fs.readSync (pread, reused buffer)": async (fd, position, length) => {
    const n = fs.readSync(fd, reused, 0, length, position);
    return reused.subarray(0, n);
  },
  "node:fs fs.read (pread, thread pool)": (fd, position, length) =>
    new Promise((resolve, reject) => {
      const buffer = new Uint8Array(length);
      fs.read(fd, buffer, 0, length, position, (e, n) =>
        e ? reject(e) : resolve(buffer.subarray(0, n)),
      );
    }),
  "Bun.file(path).slice().arrayBuffer()": async (_fd, position, length) =>
    new Uint8Array(
      await Bun.file(file)
        .slice(position, position + length)
        .arrayBuffer(),
    ),
  // The open fd's file by its /proc name (Linux): what a replica moving between log dirs
  // reads, since the fd it holds stays right when the segment is renamed or deleted.
  "Bun.file(/proc/self/fd/N).slice().bytes()": async (fd, position, length) =>
    await Bun.file(`/proc/self/fd/${fd}`)
      .slice(position, position + length)
      .bytes(),
  "Bun.file(fd).slice().arrayBuffer()": async (fd, position, length) =>
    new Uint8Array(
      await Bun.file(fd)
        .slice(position, position + length)
        .arrayBuffer(),
    ),
};

async function pass(read: Reader): Promise<{ mbPerSec: number; correct: boolean }> {
  const fd = fs.openSync(file, "r");
  let correct = true;
  const start = performance.now();
  for (let position = 0; position < sizeBytes; position += chunkBytes) {
    const chunk = await read(fd, position, Math.min(chunkBytes, sizeBytes - position));
    if (
      chunk[0] !== data[position] ||
      chunk[chunk.length - 1] !== data[position + chunk.length - 1]
    ) {
      correct = false;
    }
  }
  const seconds = (performance.now() - start) / 1000;
  fs.closeSync(fd);
  return { mbPerSec: sizeBytes / 1048576 / seconds, correct };
}

/** The same range read twice through one fd must give the same bytes. */
async function rereadAgrees(read: Reader): Promise<boolean> {
  const fd = fs.openSync(file, "r");
  const first = await read(fd, 0, 8192);
  const second = await read(fd, 0, 8192);
  fs.closeSync(fd);
  return first[5000] === data[5000] && second[5000] === data[5000];
}

for (const [name, read] of Object.entries(methods)) {
  const runs = [await pass(read), await pass(read), await pass(read)];
  const rates = runs.map((r) => r.mbPerSec).sort((a, b) => a - b);
  const correct = runs.every((r) => r.correct) && (await rereadAgrees(read));
  console.log(
    `${name.padEnd(40)} ${rates[1].toFixed(0).padStart(6)} MB/s  ` +
      `bytes ${correct ? "correct" : "WRONG (a range read twice differs)"}`,
  );
}
console.log(
  `(${sizeBytes / 1048576} MiB file, ${chunkBytes / 1024} KiB chunks, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")})`,
);
fs.rmSync(dir, { recursive: true, force: true });
