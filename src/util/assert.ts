/**
 * Programmer-error assertions (TigerBeetle style): an assertion failure means a bug in Quill,
 * never bad client input. Operating errors go back to clients as Kafka error codes instead.
 */
export class AssertionError extends Error {
  override readonly name = "AssertionError";
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new AssertionError(message);
}
