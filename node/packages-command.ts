/**
 * `runcode packages add NAME... [--lock runcode-packages.json]`: bundles npm packages installed in the current
 * directory (node/packages.ts) into `runcode-packages/` beside the lock file and lists them in it
 * (node/packages-lock.ts), for `runcode serve` (`RUNCODE_PACKAGES`) and the edge's build to boot.
 * @module
 */
import { parseArgs } from "node:util";
import { usageError } from "./cli-flags.js";
import { addPackages, PACKAGES_LOCK_FILE } from "./packages-lock.js";

export function packagesCommand(args: string[]): void {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(args);
  } catch (error) {
    usageError((error as Error).message);
  }
  const [verb, ...names] = parsed.positionals;
  if (verb !== "add" || names.length === 0) usageError("usage: runcode packages add NAME... [--lock file]");
  try {
    for (const { specifier, version, file } of addPackages(names, parsed.values.lock))
      console.log(`${specifier}@${version}: ${file}`);
  } catch (error) {
    console.error(`runcode packages: ${(error as Error).message.replace(/^createSandbox: /, "")}`);
    process.exit(1);
  }
}

function parse(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    options: { lock: { type: "string", default: PACKAGES_LOCK_FILE } },
  });
}
