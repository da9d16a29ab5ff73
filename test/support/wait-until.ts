/**
 * Polls `condition` until it holds, failing after `timeoutMs`. One helper for the tests that
 * wait on a broker, a ZooKeeper or a log line, instead of a copy in each file.
 */
export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what = "condition",
  pollMs = 25,
): Promise<void> {
  const deadlineMs = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadlineMs) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await Bun.sleep(pollMs);
  }
}
