// The pool runs tests with Node compatibility on, so the TypeScript compiler would take workerd for Node and reach
// for `os` and `fs` while loading. A deployed Worker has no `process`; this makes the tests see the same.
const scope = globalThis as unknown as { process?: { browser?: boolean } };
scope.process ??= {};
scope.process.browser = true;
