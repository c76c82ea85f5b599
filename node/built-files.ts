/**
 * Files of the build found at run time, by their path from the Node entry's directory (`threads/worker.js`, a worker
 * thread's script; `package-probe.js`, a child process's; `../web/`, the playground): from dist/node/ (tsc's output,
 * also for this module's TypeScript source in the tests, since worker threads cannot load TypeScript) or from
 * dist/bundle/ (the package's entries bundled by scripts/bundle-node.mjs, which keeps this module's code at the
 * bundle's top level, beside the entries, and the worker and probe scripts at the same paths).
 * @module
 */

/** The file at `path` from the Node entry's directory of this build. */
export function builtFile(path: string): URL {
  return import.meta.url.endsWith(".ts")
    ? new URL(`../dist/node/${path}`, import.meta.url)
    : new URL(path, import.meta.url);
}
