import { describe, expect, test } from "bun:test";
import { ConfigError } from "../../src/config/config-error.ts";
import { parseProperties } from "../../src/config/properties.ts";

const asMap = (text: string) =>
  Object.fromEntries(parseProperties(text).map((e) => [e.key, e.value]));

describe("parseProperties", () => {
  test("separators: =, :, blanks, and blanks around a separator", () => {
    expect(asMap("a=1\nb:2\nc 3\nd = 4\ne\t:\t5\nf   =   6")).toEqual({
      a: "1",
      b: "2",
      c: "3",
      d: "4",
      e: "5",
      f: "6",
    });
  });

  test("only the first separator splits; later ones belong to the value", () => {
    expect(asMap("listeners=PLAINTEXT://:9092\nurl: http://x=y")).toEqual({
      listeners: "PLAINTEXT://:9092",
      url: "http://x=y",
    });
  });

  test("comments with # and !, blank lines and leading blanks are skipped", () => {
    expect(asMap("# comment\n! also\n\n   \n  key=value\n\t# indented comment")).toEqual({
      key: "value",
    });
  });

  test("a key with no value has the empty string; trailing blanks of a value are kept as in Java", () => {
    expect(asMap("empty\nempty2=\nsp=x  ")).toEqual({ empty: "", empty2: "", sp: "x  " });
  });

  test("escapes: \\t \\n \\uXXXX, escaped separators in keys, escaped backslash", () => {
    expect(asMap("k\\=ey\\:x\\ y = a\\tb\\nc\\u00e9\\\\d\\q")).toEqual({
      "k=ey:x y": "a\tb\nc\u00e9\\dq",
    });
  });

  test("a line ending in an odd number of backslashes continues, leading blanks of the next dropped", () => {
    expect(asMap("log.dirs=/a,\\\n    /b,\\\n\t/c\nnext=1")).toEqual({
      "log.dirs": "/a,/b,/c",
      next: "1",
    });
  });

  test("an even number of trailing backslashes is a literal backslash, not a continuation", () => {
    expect(asMap("path=c:\\\\\nnext=1")).toEqual({ path: "c:\\", next: "1" });
  });

  test("a comment ending in a backslash does not swallow the next line", () => {
    expect(asMap("# note \\\nkey=value")).toEqual({ key: "value" });
  });

  test("a continuation at end of file ends the value", () => {
    expect(asMap("k=v\\")).toEqual({ k: "v" });
  });

  test("CRLF and CR line ends; line numbers point at the start of each logical line", () => {
    const entries = parseProperties("a=1\r\n# c\r\nb=2\\\r\n  3\rc=4");
    expect(entries).toEqual([
      { key: "a", value: "1", line: 1 },
      { key: "b", value: "23", line: 3 },
      { key: "c", value: "4", line: 5 },
    ]);
  });

  test("a repeated key appears twice, in order", () => {
    expect(parseProperties("k=1\nk=2").map((e) => e.value)).toEqual(["1", "2"]);
    expect(asMap("k=1\nk=2")).toEqual({ k: "2" });
  });

  test("a malformed \\u escape is a ConfigError naming the line", () => {
    expect(() => parseProperties("a=1\nb=\\u12x4")).toThrow(ConfigError);
    expect(() => parseProperties("a=1\nb=\\u12x4")).toThrow(/line 2/);
  });
});
