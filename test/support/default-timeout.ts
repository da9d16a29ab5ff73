/**
 * Preloaded for every `bun test` run (bunfig.toml): a test or hook without its own timeout gets
 * 30 s instead of Bun's 5 s. `[test] timeout` in bunfig.toml is ignored by Bun 1.4.4, and the
 * `afterAll` hooks that stop a cluster of brokers took over 5 s at load average 20-30 on the
 * 2-core CI machine (a failed hook fails the run); only a hung test waits longer for it.
 */
import { setDefaultTimeout } from "bun:test";

setDefaultTimeout(30_000);
