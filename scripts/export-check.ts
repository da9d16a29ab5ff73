/**
 * The export check at the size: test/cli/export.test.ts with 1,000,000 records over
 * 6 partitions (`npm test` runs it with 120,000 to stay within the suite's time budget).
 *
 *   bun scripts/export-check.ts [records]
 */
const records = process.argv[2] ?? "1000000";
const proc = Bun.spawn(["bun", "test", "--timeout", "900000", "test/cli/export.test.ts"], {
  cwd: `${import.meta.dir}/..`,
  env: { ...process.env, QUILL_EXPORT_RECORDS: records },
  stdout: "inherit",
  stderr: "inherit",
});
process.exit(await proc.exited);
