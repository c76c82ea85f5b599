/**
 * The child process that finds a CommonJS package's named exports for node/packages.ts: reads from stdin the
 * package's bundle, an ES module whose default export is its `module.exports`, runs it in a sandbox of this package
 * (on this process's thread, with the Web APIs, the fuel and memory below) and prints as JSON the keys of that default
 * export as its top level ends, which are what a module importing it reads (timers it leaves pending do not lose
 * them), or `[]` when its top level does not end (it throws, runs out of fuel or memory). The package's code so runs
 * only in the guest, never with the host's powers; the parent trusts nothing it prints.
 * @module
 */
import { createSandbox } from "./index.js";

/**
 * The fuel of a package's top level: 20 times what lodash/fp's takes (2.4 * 10^7; lodash's 1.4 * 10^7), and a top
 * level that never ends is stopped within seconds (3.4 s for a bare loop, load average 5).
 */
const PROBE_FUEL = 500_000_000;
const PROBE_MEMORY_LIMIT_BYTES = 128 * 1024 * 1024;

let bundle = "";
process.stdin.setEncoding("utf8");
for await (const chunk of process.stdin) bundle += chunk;
const sandbox = createSandbox({
  threads: false,
  webApis: true,
  safetyCap: { fuel: PROBE_FUEL },
  defaultMemoryLimitBytes: PROBE_MEMORY_LIMIT_BYTES,
});
// Reported rather than returned: the run goes on while timers are pending, and may run out of fuel waiting for them.
const run = await sandbox.runCode('import m from "./package.js"; report(Object.keys(m)); export default 0;', {
  language: "javascript",
  modules: { "./package.js": bundle },
});
process.stdout.write(JSON.stringify(run.reports?.[0] ?? []));
