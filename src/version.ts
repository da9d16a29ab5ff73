import packageJson from "../package.json" with { type: "json" };

// Replaced by `bun build --define` (scripts/build.ts, scripts/release.ts). A plain
// `bun src/main.ts` run has no such globals, so typeof is "undefined" and both read "dev".
declare const QUILL_BUILD_COMMIT: string | undefined;
declare const QUILL_BUILD_DATE: string | undefined;

/** Quill's version, taken from package.json; the bundler inlines it into the binary. */
export const VERSION: string = packageJson.version;

/** The git commit the binary was built from (12 hex digits, `-dirty` if the tree had changes). */
export const BUILD_COMMIT: string =
  typeof QUILL_BUILD_COMMIT === "string" ? QUILL_BUILD_COMMIT : "dev";

/** When the binary was built, ISO 8601 UTC (SOURCE_DATE_EPOCH when set, for reproducibility). */
export const BUILD_DATE: string = typeof QUILL_BUILD_DATE === "string" ? QUILL_BUILD_DATE : "dev";

/** One line for `quill version` and the broker's first log line. */
export function versionLine(): string {
  return `quill ${VERSION} (commit ${BUILD_COMMIT}, built ${BUILD_DATE})`;
}
