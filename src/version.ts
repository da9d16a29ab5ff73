import packageJson from "../package.json" with { type: "json" };

/** Quill's version, taken from package.json; `bun build --compile` inlines it into the binary. */
export const VERSION: string = packageJson.version;
