// The compatibility programs are written in four languages; scripts/compat.ts builds its table
// from their step lines. This keeps the step names and the "skipped (after X failed)" rules of
// scenario.py, Steps.java and main.go identical to scenario-steps.ts, and the record shape (what
// the checks compare) identical too, so a cell means the same thing in every column.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { APPLICATION_STEPS } from "./support/application-steps.ts";
import { DEPENDS_ON, SECURITY_CLIENTS, SECURITY_STEPS, STEPS } from "./support/scenario-steps.ts";

const dir = import.meta.dir;
const SOURCES = {
  python: join(dir, "support", "scenario.py"),
  java: join(dir, "java", "src", "main", "java", "quill", "compat", "Steps.java"),
  go: join(dir, "franz-go", "main.go"),
};

/** Reads `"step": [deps]`, `"step", List.of(deps)` and `"step": {deps}` lines into a map. */
function dependencyTable(source: string): Record<string, string[]> {
  const table: Record<string, string[]> = {};
  for (const line of source.split("\n")) {
    const match = /^\s*"([a-z-]+)"\s*[:,]\s*(?:\[|\{|List\.of\()(.*)$/.exec(line);
    if (!match?.[1] || !match[2]) continue;
    table[match[1]] = [...match[2].matchAll(/"([a-z-]+)"/g)].map((m) => m[1] ?? "");
  }
  return table;
}

for (const [language, path] of Object.entries(SOURCES)) {
  test(`${language} skips the same steps after the same failures as scenario-steps.ts`, () => {
    const table = dependencyTable(readFileSync(path, "utf8"));
    for (const step of [...SECURITY_STEPS, ...STEPS]) {
      expect({ step, dependsOn: table[step] ?? [] }).toEqual({
        step,
        dependsOn: [...DEPENDS_ON[step]],
      });
    }
  });
}

test("every program builds the same records: 100 keys, 10,000 per codec, one value text", () => {
  const programs = [
    join(dir, "support", "scenario.ts"),
    join(dir, "support", "scenario.py"),
    join(dir, "java", "src", "main", "java", "quill", "compat", "Records.java"),
    join(dir, "java", "src", "main", "java", "quill", "compat", "Main.java"),
    join(dir, "franz-go", "main.go"),
  ].map((path) => readFileSync(path, "utf8"));
  const all = programs.join("\n");
  // One definition of each constant per language: TypeScript, Python, Java, Go.
  expect(all.match(/KEY_COUNT = 100\b|keyCount\s+= 100\b/g)?.length).toBe(4);
  expect(all.match(/RECORDS_PER_CODEC = 10_000\b|recordsPerCodec\s+= 10_000\b/g)?.length).toBe(4);
  for (const source of programs.filter((text) => /abcdefghij/.test(text))) {
    expect(source).toMatch(/value .*of .*abcdefghij/);
  }
});

test("the Java applications run the steps scripts/compat.ts reports, in the same order", () => {
  const apps = join(dir, "apps", "src", "main", "java", "quill", "compat", "apps");
  const main = readFileSync(join(apps, "Main.java"), "utf8");
  for (const [name, steps] of Object.entries(APPLICATION_STEPS)) {
    const match = new RegExp(`case "${name}" -> new (\\w+)\\(\\)`).exec(main);
    expect(match?.[1]).toBeDefined();
    const source = readFileSync(join(apps, `${match?.[1]}.java`), "utf8");
    const ran = [...source.matchAll(/steps\.run\(\s*"([a-z-]+)"/g)].map((m) => m[1]);
    expect({ name, ran }).toEqual({ name, ran: [...steps] });
  }
});

/** Every client program, and the file that runs its steps. */
const PROGRAMS: Record<string, string> = {
  java: join(dir, "java", "src", "main", "java", "quill", "compat", "Main.java"),
  "franz-go": join(dir, "franz-go", "steps.go"),
  "confluent-kafka-python": join(dir, "confluent-kafka-python", "main.py"),
  kcat: join(dir, "kcat", "main.ts"),
  kafkajs: join(dir, "kafkajs", "main.ts"),
  "platformatic-kafka": join(dir, "platformatic-kafka", "main.ts"),
  "kafka-python": join(dir, "kafka-python", "main.py"),
};

test("every client program runs each step, or marks it n/a with a reason, in the table's order", () => {
  const call = /(?:run|markNotApplicable|not_applicable)\(\s*"([a-z-]+)"/g;
  for (const [client, path] of Object.entries(PROGRAMS)) {
    // A step run on one branch and marked n/a on the other (a runtime check) counts once.
    const steps = [...readFileSync(path, "utf8").matchAll(call)]
      .map((m) => m[1])
      .filter((step, i, all) => step !== all[i - 1]);
    const secure = (SECURITY_CLIENTS as readonly string[]).includes(client);
    const expected = secure ? [...SECURITY_STEPS, ...STEPS] : [...STEPS];
    expect({ client, steps }).toEqual({ client, steps: expected });
  }
});

test("the matrix runs every client program the contract test reads", () => {
  const compat = readFileSync(join(dir, "..", "..", "scripts", "compat.ts"), "utf8");
  for (const client of Object.keys(PROGRAMS)) expect(compat).toContain(`"${client}"`);
});
