/**
 * What the broker's start-up has opened so far, undone in reverse order. Each start-up step
 * pushes the undoing of what it opened as soon as it has opened it, so a failure at any later
 * step (a port in use, ZooKeeper gone) closes exactly what the earlier steps opened, and a clean
 * stop runs the same list: teardown is written once.
 */
export class CleanupStack {
  private readonly cleanups: { readonly what: string; readonly run: () => unknown }[] = [];

  /** `what` names the resource in the log line if its cleanup fails. */
  push(what: string, run: () => unknown): void {
    this.cleanups.push({ what, run });
  }

  /**
   * Runs every cleanup, the last pushed first. One that fails is logged and the rest still run
   * (a log that will not close must not keep the ZooKeeper session open); the first failure is
   * thrown once all have run.
   */
  async unwind(logError: (message: string) => void): Promise<void> {
    let firstError: unknown = null;
    for (let next = this.cleanups.pop(); next !== undefined; next = this.cleanups.pop()) {
      try {
        await next.run();
      } catch (error) {
        logError(`closing ${next.what} failed: ${String(error)}`);
        firstError ??= error;
      }
    }
    if (firstError !== null) throw firstError;
  }
}
