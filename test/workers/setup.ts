import { loadTypeScript } from "../../src/transpile.js";

// The pool runs tests with Node compatibility on, so the TypeScript compiler would take workerd for Node and reach
// for `os` and `fs` while loading. A deployed Worker has no `process`; this makes the tests see the same.
const scope = globalThis as unknown as { process?: { browser?: boolean } };
scope.process ??= {};
scope.process.browser = true;

// The pool's module runner loads modules over the test's own connection: a first import from inside a request to
// SELF would wait forever on I/O that belongs to another request. Load the compiler here, in the test's context.
await loadTypeScript();
