/**
 * Builds sample messages straight from Kafka's JSON specs, independently of the generated code,
 * so the round-trip tests check the generator against the specs rather than against itself.
 */
import { existsSync } from "node:fs";
import type { FieldSpec, MessageSpec, Range } from "../../scripts/gen-protocol.ts";
import {
  camel,
  inRange,
  loadSpecUnion,
  messagesDirs,
  PRIMITIVES,
  parseRange,
} from "../../scripts/gen-protocol.ts";

/** The spec directories the generator reads, oldest set first (KAFKA_MESSAGES_DIR overrides). */
export const MESSAGES_DIRS: readonly string[] = messagesDirs([]);
export const HAVE_SPECS = MESSAGES_DIRS.every((dir) => existsSync(dir));
/** The union the generator builds from those sets. */
export const SPECS: MessageSpec[] = HAVE_SPECS ? loadSpecUnion(MESSAGES_DIRS) : [];

export type Sample = { [field: string]: unknown };

/** The versions a message spec declares, low to high. */
export function versionsOf(spec: MessageSpec): number[] {
  const r = parseRange(spec.validVersions)!;
  return Array.from({ length: r.hi - r.lo + 1 }, (_, i) => r.lo + i);
}

function structsOf(spec: MessageSpec): Map<string, FieldSpec[]> {
  const structs = new Map<string, FieldSpec[]>();
  const walk = (fields: FieldSpec[]) => {
    for (const f of fields) {
      if (f.fields) {
        structs.set(f.type.replace(/^\[\]/, ""), f.fields);
        walk(f.fields);
      }
    }
  };
  for (const cs of spec.commonStructs ?? []) {
    structs.set(cs.name, cs.fields);
    walk(cs.fields);
  }
  walk(spec.fields);
  return structs;
}

/** The value a decoder yields for a field the version lacks. */
function defaultValue(f: FieldSpec, structs: Map<string, FieldSpec[]>, version: number): unknown {
  const d = f.default;
  if (d === "null") return null;
  if (f.type.startsWith("[]")) return [];
  switch (f.type) {
    case "bool":
      return d === true || d === "true";
    case "int64":
      return d === undefined ? 0n : BigInt(d as string);
    case "string":
      return d === undefined ? "" : String(d);
    case "uuid":
      return new Uint8Array(16);
    case "bytes":
      return new Uint8Array(0);
    case "records":
      return null;
  }
  if (PRIMITIVES.has(f.type)) return d === undefined ? 0 : Number(d);
  return buildStruct(structs.get(f.type)!, structs, version, "defaults", { n: 0 });
}

type Mode = "values" | "nulls" | "defaults";

function sampleScalar(type: string, c: number): unknown {
  switch (type) {
    case "bool":
      return true;
    case "int8":
      return (c % 120) + 2;
    case "int16":
      return 1000 + c;
    case "uint16":
      return 65000 - c;
    case "int32":
      return -100000 - c;
    case "int64":
      return 10n ** 12n + BigInt(c);
    case "float64":
      return c + 0.25;
    case "string":
      return `s${c}-é`;
    case "uuid":
      return new Uint8Array(16).fill((c % 250) + 1);
    case "bytes":
      return new Uint8Array([c & 0xff, 1, 2]);
    case "records":
      return new Uint8Array([9, 8, 7, c & 0xff]);
  }
  throw new Error(`not a scalar: ${type}`);
}

function fieldValue(
  f: FieldSpec,
  structs: Map<string, FieldSpec[]>,
  version: number,
  mode: Mode,
  counter: { n: number },
): unknown {
  const present = inRange(parseRange(f.taggedVersions ?? f.versions), version);
  if (!present || mode === "defaults") return defaultValue(f, structs, version);
  const nullable =
    f.nullableVersions !== undefined && inRange(parseRange(f.nullableVersions), version);
  if (mode === "nulls" && nullable) return null;
  const c = ++counter.n;
  const elem = f.type.replace(/^\[\]/, "");
  const one = (): unknown =>
    PRIMITIVES.has(elem)
      ? sampleScalar(elem, c)
      : buildStruct(structs.get(elem)!, structs, version, mode, counter);
  if (!f.type.startsWith("[]")) {
    // A boolean whose default is true is only non-default when false.
    if (f.type === "bool") return !(defaultValue(f, structs, version) as boolean);
    return one();
  }
  if (PRIMITIVES.has(elem)) return [sampleScalar(elem, c), sampleScalar(elem, c + 1)];
  return [one(), one()];
}

function buildStruct(
  fields: FieldSpec[],
  structs: Map<string, FieldSpec[]>,
  version: number,
  mode: Mode,
  counter: { n: number },
): Sample {
  const out: Sample = {};
  for (const f of fields) out[camel(f.name)] = fieldValue(f, structs, version, mode, counter);
  return out;
}

/**
 * A message for `version` with a non-default value in every field the version has (or null in
 * every field nullable in that version, for mode "nulls") and the decoder's default elsewhere.
 */
export function sampleMessage(
  spec: MessageSpec,
  version: number,
  mode: "values" | "nulls",
): Sample {
  return buildStruct(spec.fields, structsOf(spec), version, mode, { n: 0 });
}

export type { Range };
