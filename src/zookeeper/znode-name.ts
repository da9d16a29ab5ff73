/**
 * Arbitrary strings (consumer group ids may hold any character) as single znode names.
 *
 * A name ZooKeeper accepts as it is stays as it is, so the paths match what Kafka and the old
 * tools wrote (`/consumers/my-group/...`). Other names ("a/b", ".", "..", control characters,
 * ZooKeeper's reserved ranges, or anything containing "%") are percent-encoded as UTF-8. Since
 * every encoded name contains "%" and no plain name does, decoding is unambiguous.
 */
import { assert } from "../util/assert.ts";

/** Characters ZooKeeper's `PathUtils.validatePath` refuses, plus "/" and our escape "%". */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\ud800-\uf8ff\ufff0-\uffff/%]/;

export function encodeZnodeName(name: string): string {
  assert(name.length > 0, "a znode name must not be empty");
  if (!UNSAFE.test(name) && name !== "." && name !== "..") return name;
  let encoded = "";
  for (const byte of new TextEncoder().encode(name)) {
    const char = String.fromCharCode(byte);
    encoded += /[A-Za-z0-9_-]/.test(char)
      ? char
      : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return encoded;
}

export function decodeZnodeName(name: string): string {
  return name.includes("%") ? decodeURIComponent(name) : name;
}
