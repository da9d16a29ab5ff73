import { expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lockDir, withBuildLock, withBuildLockSync } from "../../scripts/build-lock.ts";

const key = () => join(tmpdir(), `build-lock-test-${process.pid}-${Math.random()}`);

test("builds of one place run one after the other; of two places, at once", async () => {
  const place = key();
  const events: string[] = [];
  const build = (name: string) =>
    withBuildLock(place, async () => {
      events.push(`${name} start`);
      await Bun.sleep(50);
      events.push(`${name} end`);
      return name;
    });
  expect(await Promise.all([build("a"), build("b")])).toEqual(["a", "b"]);
  expect(events).toEqual(["a start", "a end", "b start", "b end"]);
  const other = withBuildLock(key(), async () => "other");
  expect(await Promise.race([other, Bun.sleep(1_000).then(() => "blocked")])).toBe("other");
});

test("a failed build releases the lock", async () => {
  const place = key();
  await expect(withBuildLock(place, () => Promise.reject(new Error("mvn failed")))).rejects.toThrow(
    "mvn failed",
  );
  expect(withBuildLockSync(place, () => "next")).toBe("next");
});

test("a lock left by a process that died is taken over", async () => {
  const place = key();
  const dead = Bun.spawnSync(["true"]).pid;
  const lock = lockDir(place);
  mkdirSync(lock);
  writeFileSync(join(lock, "pid"), String(dead));
  try {
    expect(await withBuildLock(place, async () => "taken over")).toBe("taken over");
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
});
