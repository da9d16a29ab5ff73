/**
 * A value now, or later. The produce path returns its outcome synchronously when nothing has to
 * wait (acks 0 and 1, no implicit transaction partitions): with librdkafka's one partition per
 * request, the six nested async functions it took before made a promise and a microtask each per
 * request, a measurable share of the broker's CPU per request (docs/scaling.md).
 */
export type MaybePromise<T> = T | Promise<T>;

/** `next(value)`, at once when `value` is not a promise. */
export function thenMaybe<T, U>(
  value: MaybePromise<T>,
  next: (resolved: T) => MaybePromise<U>,
): MaybePromise<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}
