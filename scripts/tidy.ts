/**
 * Finds what breaks TigerBeetle's tidy rules in hand-written code: functions longer than 70 lines
 * and lines longer than 100 columns. test/tidy.test.ts holds the rules against
 * test/tidy-allowlist.json; `bun scripts/tidy.ts` prints the current findings in that file's
 * format. Generated code (src/protocol/generated) and fixtures are not hand-written.
 *
 * A function is any function, method, accessor, constructor, function expression or arrow, counted
 * from its first line to its last. `describe(...)` callbacks are exempt: they group tests the way
 * a module groups functions.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import ts from "typescript";

export const FUNCTION_LINES_MAX = 70;
export const LINE_COLUMNS_MAX = 100;

const REPO_ROOT = resolve(import.meta.dir, "..");
const ALLOWLIST_PATH = join(REPO_ROOT, "test", "tidy-allowlist.json");
const EXCLUDED = [/^src\/protocol\/generated\//, /^test\/fixtures\//, /\/fixtures\//];

export interface Allowlist {
  /** `path: name` of each function over the limit, with its length when listed. */
  readonly functions: Record<string, number>;
  /** Path of each file with lines over the limit, and how many it may have at most. */
  readonly longLines: Record<string, number>;
}

export interface Findings {
  readonly functions: Map<string, number>;
  readonly longLines: Map<string, number>;
}

export function handWrittenFiles(): string[] {
  const files: string[] = [];
  for (const dir of ["src", "test", "scripts"]) {
    for (const file of new Bun.Glob(`${dir}/**/*.ts`).scanSync({ cwd: REPO_ROOT })) {
      if (!EXCLUDED.some((pattern) => pattern.test(file))) files.push(file);
    }
  }
  return files.sort();
}

/** A name a reader can find: `Class.method`, `name`, or the call a callback is passed to. */
function functionName(node: ts.Node, source: ts.SourceFile): string {
  const named = node as { name?: ts.Node };
  const parent = node.parent;
  if (ts.isConstructorDeclaration(node)) return `${className(parent)}.constructor`;
  if (ts.isClassElement(node) && named.name)
    return `${className(parent)}.${named.name.getText(source)}`;
  if (named.name) return named.name.getText(source);
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) {
    return parent.name.getText(source);
  }
  if (ts.isCallExpression(parent)) {
    const first = parent.arguments[0];
    const title = first && ts.isStringLiteralLike(first) ? `(${JSON.stringify(first.text)})` : "()";
    return `${parent.expression.getText(source)}${title} callback`;
  }
  return "<anonymous>";
}

function className(node: ts.Node): string {
  const named = node as { name?: ts.Identifier };
  return named.name?.text ?? "<class>";
}

function isDescribeCallback(node: ts.Node): boolean {
  const parent = node.parent;
  if (!ts.isCallExpression(parent)) return false;
  const callee = parent.expression.getText();
  return callee === "describe" || callee.startsWith("describe.");
}

function isFunction(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isArrowFunction(node)
  );
}

/** Every function over the limit in `file` as `file: name`, with its length in lines. */
export function longFunctions(file: string, text: string): Map<string, number> {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found = new Map<string, number>();
  const visit = (node: ts.Node): void => {
    if (isFunction(node) && node.body !== undefined && !isDescribeCallback(node)) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > FUNCTION_LINES_MAX) {
        const base = `${file}: ${functionName(node, source)}`;
        let key = base;
        for (let n = 2; found.has(key); n++) key = `${base} #${n}`;
        found.set(key, lines);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * Lines the formatter keeps whole whatever their length, so they are not counted: the opening of
 * a test or describe whose title is one string literal (as Prettier does for test calls; the
 * title says best what the test holds), and an import or re-export of a single name.
 */
const TEST_TITLE_LINE =
  /^\s*(?:test|it|describe)(?:\.\w+)?\(\s*(["'`]).*\1,\s*(?:async\s*)?\(\)\s*=>\s*\{$/;
const SINGLE_IMPORT_LINE =
  /^(?:import|export) (?:type )?\{ [\w$]+(?: as [\w$]+)? \} from "[^"]+";$/;
const UNWRAPPABLE = [TEST_TITLE_LINE, SINGLE_IMPORT_LINE];

export function countLongLines(text: string): number {
  const long = (line: string) =>
    line.length > LINE_COLUMNS_MAX && !UNWRAPPABLE.some((pattern) => pattern.test(line));
  return text.split("\n").filter(long).length;
}

export function findings(): Findings {
  const functions = new Map<string, number>();
  const longLines = new Map<string, number>();
  for (const file of handWrittenFiles()) {
    const text = readFileSync(join(REPO_ROOT, file), "utf8");
    for (const [key, lines] of longFunctions(file, text)) functions.set(key, lines);
    const count = countLongLines(text);
    if (count > 0) longLines.set(file, count);
  }
  return { functions, longLines };
}

/**
 * A path outside the repository (the shared folder beside the clone, or an absolute one under
 * /work) or the Bun notes kept there. Only the protocol generator reads such a path: Kafka's
 * message definitions are its input and are never committed (docs/protocol.md).
 */
const OUTSIDE_POINTER = /\.\.\/shared\b|\/work\/|\bnotes\/bun-|\bnotes §/;
const MAY_POINT_OUTSIDE = new Set(["scripts/gen-protocol.ts"]);

/** `file:line` of each line of hand-written code or bunfig.toml that points outside the repo. */
export function outsidePointers(): string[] {
  const found: string[] = [];
  for (const file of [...handWrittenFiles(), "bunfig.toml"]) {
    if (MAY_POINT_OUTSIDE.has(file)) continue;
    const lines = readFileSync(join(REPO_ROOT, file), "utf8").split("\n");
    lines.forEach((line, i) => {
      if (OUTSIDE_POINTER.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  return found;
}

export function loadAllowlist(): Allowlist {
  return JSON.parse(readFileSync(ALLOWLIST_PATH, "utf8")) as Allowlist;
}

if (import.meta.main) {
  const found = findings();
  const sorted = (m: Map<string, number>) => Object.fromEntries([...m].sort());
  const out = { functions: sorted(found.functions), longLines: sorted(found.longLines) };
  console.log(JSON.stringify(out, null, 2));
}
