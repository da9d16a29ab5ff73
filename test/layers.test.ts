/**
 * The layer table, held by a test as Kafka's import-control holds its packages: each folder of
 * src/ has a rank, and a file may import only from its own folder or from a folder of a lower
 * rank. Folders of the same rank (server, controller) are peers and do not import each other.
 * docs/architecture.md explains the layers; change both together.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "..", "src");

/** Highest first. A folder of src/ missing here fails the test until it is given a place. */
const LAYERS: readonly (readonly string[])[] = [
  ["main.ts"],
  ["cli"],
  ["broker"],
  ["api"],
  // The coordinators keep their state through the replica manager and metadata cache, as Kafka's
  // GroupCoordinator and TransactionCoordinator sit on its ReplicaManager.
  ["coordinator"],
  ["server", "controller"],
  // client/: the CLI's Kafka client over network/ and protocol/; it knows nothing of the broker.
  ["metadata", "client"],
  ["network"],
  // Below network, which authenticates connections; above storage and ZooKeeper.
  ["security"],
  ["storage"],
  ["zookeeper"],
  ["protocol"],
  ["config"],
  ["common"],
  ["util", "version.ts"],
];

const RANK = new Map(LAYERS.flatMap((names, i) => names.map((n) => [n, LAYERS.length - i])));

/**
 * `import … from "x"`, `export … from "x"`, `import "x"` and `import("x")`, type-only too.
 * Imports from outside src/ (package.json for the version) are not layers.
 */
const IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g;

interface Arrow {
  readonly from: string;
  readonly to: string;
  readonly file: string;
  readonly target: string;
}

/** The folder right under src/ (or the file itself for src/main.ts, src/version.ts). */
const folderOf = (file: string) => relative(SRC, file).split("/")[0]!;

function sourceFiles(): string[] {
  return readdirSync(SRC, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts"))
    .map((f) => join(SRC, f));
}

function arrows(): Arrow[] {
  return sourceFiles().flatMap((file) => {
    const text = readFileSync(file, "utf8");
    return [...text.matchAll(IMPORT)]
      .map((m) => {
        const target = resolve(dirname(file), m[1]!);
        return { from: folderOf(file), to: folderOf(target), file, target };
      })
      .filter((a) => a.from !== a.to && !relative(SRC, a.target).startsWith(".."));
  });
}

/** Folder-level cycles (strongly connected components of more than one folder). */
function folderCycles(edges: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) visit(w);
      if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, low.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1) cycles.push(component.sort());
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

describe("layers", () => {
  const all = arrows();
  const show = (a: Arrow) =>
    `${relative(SRC, a.file)} imports ${relative(SRC, a.target)} (${a.from} -> ${a.to})`;

  test("every folder of src/ has a place in the table", () => {
    const folders = new Set(sourceFiles().map(folderOf));
    expect([...folders].filter((f) => !RANK.has(f))).toEqual([]);
  });

  test("imports go to a lower layer only (peers do not import each other)", () => {
    const upward = all.filter((a) => (RANK.get(a.to) ?? Infinity) >= (RANK.get(a.from) ?? 0));
    expect(upward.map(show)).toEqual([]);
  });

  test("no import cycles between folders", () => {
    const edges = new Map<string, Set<string>>();
    for (const a of all) edges.set(a.from, (edges.get(a.from) ?? new Set()).add(a.to));
    expect(folderCycles(edges)).toEqual([]);
  });

  test("the checks see the imports (the table is not vacuously true)", () => {
    expect(all.some((a) => a.from === "broker" && a.to === "api")).toBe(true);
    expect(all.some((a) => a.from === "storage" && a.to === "protocol")).toBe(true);
    expect(
      folderCycles(
        new Map([
          ["a", new Set(["b"])],
          ["b", new Set(["a"])],
        ]),
      ),
    ).toEqual([["a", "b"]]);
  });
});
