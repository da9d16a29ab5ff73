// NOTICE for a release tarball: the licence of everything a release binary embeds, gathered
// when the release is built so that it follows the lock file: the Bun runtime (its licence
// page, shipped in the bun-types package of the same version) and every production package
// installed for the target, with the licence file from its npm package.
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

interface PackageLicence {
  readonly name: string;
  readonly version: string;
  readonly licence: string;
  readonly text: string | null;
}

const LICENCE_FILE = /^(licen[sc]e|copying)(\.(md|txt|markdown))?$/i;

function packageDirs(nodeModules: string): string[] {
  const dirs: string[] = [];
  for (const entry of readdirSync(nodeModules).sort()) {
    if (entry.startsWith(".")) continue;
    const path = join(nodeModules, entry);
    if (entry.startsWith("@")) {
      for (const scoped of readdirSync(path).sort()) dirs.push(join(path, scoped));
    } else {
      dirs.push(path);
    }
  }
  return dirs;
}

function licenceOf(dir: string): PackageLicence {
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const file = readdirSync(dir).find((name) => LICENCE_FILE.test(name));
  return {
    name: pkg.name,
    version: pkg.version,
    licence: typeof pkg.license === "string" ? pkg.license : "see the package",
    text: file === undefined ? null : readFileSync(join(dir, file), "utf8").trim(),
  };
}

/** Writes NOTICE for a binary built from `stageDir` (its node_modules are what is embedded). */
export function writeNotice(path: string, stageDir: string, root: string, version: string): void {
  const bunLicence = join(root, "node_modules", "bun-types", "docs", "project", "license.mdx");
  if (!existsSync(bunLicence)) throw new Error(`${bunLicence} is missing: run npm ci first`);
  const packages = packageDirs(join(stageDir, "node_modules")).map(licenceOf);
  const sections = [
    `Quill ${version}\nLicensed under the Apache License, Version 2.0 (see LICENSE).\n\n` +
      "The quill executable embeds the third-party software below, each under its own licence.",
    `== Bun ${Bun.version}: the JavaScript runtime the executable is built on ==\n\n` +
      readFileSync(bunLicence, "utf8").trim(),
    ...packages.map(
      (p) =>
        `== ${p.name} ${p.version} (${p.licence}) ==\n\n` +
        (p.text ?? `The npm package has no licence file; its package.json says ${p.licence}.`),
    ),
  ];
  writeFileSync(path, `${sections.join("\n\n")}\n`);
}
