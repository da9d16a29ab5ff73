import { describe, expect, test } from "bun:test";
import * as generated from "../../src/protocol/generated/index.ts";
import { Reader } from "../../src/protocol/reader.ts";
import { Writer } from "../../src/protocol/writer.ts";
import { HAVE_SPECS, MESSAGES_DIRS, SPECS, sampleMessage, versionsOf } from "./spec-samples.ts";

type Decode = (r: Reader, version: number) => unknown;
type Encode = (w: Writer, version: number, m: unknown) => void;
const codecs = generated as unknown as Record<string, Decode | Encode>;

function codecFor(name: string, header: boolean): { decode: Decode; encode: Encode } {
  const decode = codecs[`${header ? "read" : "decode"}${name}`] as Decode;
  const encode = codecs[`${header ? "write" : "encode"}${name}`] as Encode;
  expect(typeof decode).toBe("function");
  expect(typeof encode).toBe("function");
  return { decode, encode };
}

function roundTrip(name: string, header: boolean, version: number, sample: unknown): void {
  const { decode, encode } = codecFor(name, header);
  const w = new Writer();
  encode(w, version, sample);
  const bytes = w.toBytes();
  const r = new Reader(bytes);
  const decoded = decode(r, version);
  expect(r.remaining()).toBe(0);
  expect(decoded).toEqual(sample);
  const again = new Writer();
  encode(again, version, decoded);
  expect(again.toBytes()).toEqual(bytes);
}

describe.skipIf(!HAVE_SPECS)(
  `round trip of every message, every version (${MESSAGES_DIRS.join(", ")})`,
  () => {
    test("the specs are all there", () => {
      expect(SPECS.length).toBe(203);
    });
    for (const spec of SPECS) {
      const header = spec.type === "header";
      for (const version of versionsOf(spec)) {
        test(`${spec.name} v${version}`, () => {
          roundTrip(spec.name, header, version, sampleMessage(spec, version, "values"));
          roundTrip(spec.name, header, version, sampleMessage(spec, version, "nulls"));
        });
      }
    }
  },
);

describe.skipIf(!HAVE_SPECS)("dispatch by API key", () => {
  test("decodeRequest/encodeResponse reach the codec of every API and version", () => {
    let checked = 0;
    let expected = 0;
    for (const api of generated.API_SPECS) {
      const request = SPECS.find((s) => s.name === `${api.name}Request`)!;
      const response = SPECS.find((s) => s.name === `${api.name}Response`)!;
      expected += api.latestVersion - api.minVersion + 1;
      for (let version = api.minVersion; version <= api.latestVersion; version++) {
        const q = sampleMessage(request, version, "values");
        const w = new Writer();
        generated.encodeRequest(api.apiKey, version, w, q);
        const decodedQ = generated.decodeRequest(api.apiKey, version, new Reader(w.toBytes()));
        expect(decodedQ as unknown).toEqual(q);
        const p = sampleMessage(response, version, "values");
        w.reset();
        generated.encodeResponse(api.apiKey, version, w, p);
        const decodedP = generated.decodeResponse(api.apiKey, version, new Reader(w.toBytes()));
        expect(decodedP as unknown).toEqual(p);
        checked++;
      }
    }
    expect(checked).toBe(expected);
    expect(checked).toBe(364);
  });
});
