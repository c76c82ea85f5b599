/**
 * A wasm file compiled once for the process, from bytes read as soon as it is named: on V8's background threads while
 * nobody asks for it, or on the caller's thread when a run asks before that compile is done. V8 compiles wasm lazily
 * (each function on its first call), so a compile is mostly validation: on the caller's thread 4 ms for the QuickJS
 * wasm and 11-14 ms for SWC's, where the background compile took 20 ms for QuickJS's from an idle event loop, and for
 * SWC's up to 80 ms more while a first run's boot held the thread (its steps wait for turns of the event loop).
 * @module
 */

/** The module of the wasm `bytes` will hold, the same one for every call (see the module comment). */
export function compiledEarly(bytes: Promise<BufferSource>): () => Promise<WebAssembly.Module> {
  let module: WebAssembly.Module | undefined;
  // A failure is the first run's to report (it awaits the same bytes, and compiles them again).
  bytes
    .then((read) => WebAssembly.compile(read))
    .then(
      (compiled) => {
        module ??= compiled;
      },
      () => {},
    );
  return async () => {
    const read = await bytes;
    module ??= new WebAssembly.Module(read);
    return module;
  };
}
