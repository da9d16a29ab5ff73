/**
 * An index file (`.index` or `.timeindex`) is missing, has a partial entry, or has entries out
 * of order or pointing outside its segment. It is an operating condition after a crash or a
 * disk problem, never a bug: the segment rebuilds the index from its `.log` file.
 */
export class CorruptIndexError extends Error {
  override readonly name = "CorruptIndexError";
}
