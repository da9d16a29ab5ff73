/**
 * Preloaded by `npm run test:unit` (scripts/test-unit.ts): starting a process fails the test, so a
 * unit run that would need ZooKeeper, kcat, Java, Python or a compiled binary fails loudly instead
 * of slowly. node:child_process goes through Bun.spawn and Bun.spawnSync, so both are covered.
 */
function refuse(name: string): () => never {
  return () => {
    throw new Error(`${name}: unit tests start no processes (see scripts/test-unit.ts)`);
  };
}

for (const name of ["spawn", "spawnSync"] as const) {
  Object.defineProperty(Bun, name, { value: refuse(`Bun.${name}`) });
}
