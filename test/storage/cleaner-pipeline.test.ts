import { describe, expect, test } from "bun:test";
import { CleanerPipeline } from "../../src/storage/cleaner-pipeline.ts";

/** A job that finishes after `delayMs` and then records `name` once its predecessor is done. */
function job(name: string, delayMs: number, done: string[], fail = false) {
  return async (previous: Promise<void>): Promise<void> => {
    await Bun.sleep(delayMs);
    await previous;
    if (fail) throw new Error(`${name} failed`);
    done.push(name);
  };
}

describe("CleanerPipeline", () => {
  test("jobs finish in the order started, whatever their own timing", async () => {
    const done: string[] = [];
    const pipeline = new CleanerPipeline(4);
    await pipeline.add(job("a", 30, done));
    await pipeline.add(job("b", 1, done));
    await pipeline.add(job("c", 15, done));
    await pipeline.finish();
    expect(done).toEqual(["a", "b", "c"]);
  });

  test("add waits while `depth` jobs are unfinished", async () => {
    const pipeline = new CleanerPipeline(2);
    let running = 0;
    let most = 0;
    const counted = async (): Promise<void> => {
      running++;
      most = Math.max(most, running);
      await Bun.sleep(5);
      running--;
    };
    for (let i = 0; i < 6; i++) await pipeline.add(counted);
    await pipeline.finish();
    expect(most).toBe(2);
    const wide = new CleanerPipeline(3);
    for (let i = 0; i < 6; i++) await wide.add(counted);
    await wide.finish();
    expect(most).toBe(3);
  });

  test("a failure fails every later job; abandon waits for the jobs still running", async () => {
    const done: string[] = [];
    const pipeline = new CleanerPipeline(8);
    await pipeline.add(job("a", 1, done));
    await pipeline.add(job("b", 5, done, true));
    let lateFinished = false;
    await pipeline.add(async (previous) => {
      await Bun.sleep(40);
      lateFinished = true;
      await previous;
      done.push("c");
    });
    await expect(pipeline.finish()).rejects.toThrow("b failed");
    await pipeline.abandon();
    expect(lateFinished).toBe(true);
    expect(done).toEqual(["a"]);
  });
});
