/**
 * Bundles the package's Node entries, as tsc compiled them to dist/node/, into dist/bundle/, which package.json's
 * `exports` and `bin` name: `runcode` (index.js), `runcode/environment` (environment.js), `runcode/host` (host.js), the CLI (cli.js) and the
 * worker threads' and the package probe's scripts at the paths they have in dist/node/, with the modules two of
 * them share in chunks beside them (each module in one file only: one core, one `SessionError` class, one pool of
 * workers, one of instances). A fresh process so loads a few files rather than ~60 modules, which took ~40% of its
 * first result's CPU (docs/performance.md, "The floor: cold start"). Dependencies stay imports of the installed
 * packages, and so does `runcode/swc`. Fails when a module that finds build files by its own URL
 * (node/built-files.ts) leaves the bundle's top level, where those paths hold. Run by `npm run build` after tsc.
 */
import { rmSync } from "node:fs";
import { dirname } from "node:path";
import { build } from "esbuild";

const FROM = "dist/node";
const OUT = "dist/bundle";
/** Each entry's path in dist/bundle/, without `.js`, and the module it bundles in dist/node/. */
const ENTRIES = {
  index: "index.js",
  environment: "environment.js",
  cli: "cli.js",
  "threads/worker": "threads/worker.js",
  "session-threads/worker": "session-threads/worker.js",
  "repl-worker": "repl-worker.js",
  // The child process finding a CommonJS package's names (node/packages.ts), at its path in dist/node/.
  "package-probe": "package-probe.js",
  // `runcode/host` in Node: with the entries above, so that a process importing both has one core, not two.
  host: "../src/host/index.js",
};
/** Modules whose code must stay at the bundle's top level (see node/built-files.ts). */
const TOP_LEVEL = [`${FROM}/built-files.js`];

rmSync(OUT, { recursive: true, force: true });
const { metafile } = await build({
  entryPoints: Object.entries(ENTRIES).map(([out, from]) => ({ in: `${FROM}/${from}`, out })),
  outdir: OUT,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  chunkNames: "[name]-[hash]",
  sourcemap: true,
  metafile: true,
  logLevel: "warning",
});

const holders = new Map();
for (const [output, { inputs }] of Object.entries(metafile.outputs)) {
  for (const input of Object.keys(inputs)) holders.set(input, [...(holders.get(input) ?? []), output]);
}
for (const [input, outputs] of holders) {
  if (outputs.length > 1) throw new Error(`scripts/bundle-node.mjs: ${input} is in ${outputs.join(" and ")}`);
}
for (const input of TOP_LEVEL) {
  const [output] = holders.get(input) ?? [];
  if (output === undefined || dirname(output) !== OUT) {
    throw new Error(`scripts/bundle-node.mjs: ${input} must be bundled at the top of ${OUT}, not in ${output}`);
  }
}
