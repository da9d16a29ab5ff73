/**
 * Branded types for values that are easy to mix up where they cross module boundaries: a log
 * offset and a producer id or timestamp are all bigints; a leader epoch, a partition epoch, a
 * broker id and a partition index are all numbers. The brand exists only for the compiler (a
 * branded value is its plain bigint or number at run time, so the hot path pays nothing).
 *
 * The brand is optional ("soft"): a plain literal, a decoded field or `offset + 1n` is accepted
 * where an Offset is expected, so arithmetic, codecs and tests need no casts, while a value
 * branded as one kind is refused where another is expected: a partition's leader epoch passed
 * as a broker id, or a broker id as a partition index, fails to compile.
 */
declare const brand: unique symbol;

type Brand<T, Name extends string> = T & { readonly [brand]?: Name };

/** A position in a partition's log (Kafka's offset; -1 where Kafka answers "unknown"). */
export type Offset = Brand<bigint, "Offset">;

/** The epoch of a partition's leader (bumped at each leader change), not a partition epoch. */
export type LeaderEpoch = Brand<number, "LeaderEpoch">;

/** A partition's index within its topic. */
export type PartitionIndex = Brand<number, "PartitionIndex">;

/** A broker's `broker.id` (a node id in Metadata). */
export type BrokerId = Brand<number, "BrokerId">;
