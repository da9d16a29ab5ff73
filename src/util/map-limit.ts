/**
 * Maps `items` through `fn` with at most `limit` calls in flight; results keep their order.
 * Used where one ZooKeeper read or write per item would otherwise be issued all at once (a
 * cluster with thousands of partitions) or one at a time (one round trip each).
 */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await fn(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
