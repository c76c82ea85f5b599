/**
 * A wasm file compiled once for the process, from bytes read as soon as it is named: on V8's background threads while
 * nobody asks for it, or on the caller's thread when a run asks before that compile is done. V8 compiles wasm lazily
 * (each function on its first call), so a compile is mostly validation: on the caller's thread 4 ms for the QuickJS
 * wasm and 11-14 ms for SWC's, where the background compile took 20 ms for QuickJS's from an idle event loop, and for
 * SWC's up to 80 ms more while a first run's boot held the thread (its steps wait for turns of the event loop).
 * A wasm whose background compile is no slower than the caller's (SWC's: 9-11 ms of wall time either way in a
 * process by itself, where the caller's compile took 8-10 ms of that thread's CPU and 15-23 ms of the process's, the
 * background one 4-5 and 16-18) is waited for instead when it is under way (`joinBackground`): compiling it again
 * beside it doubled that work, on two cores in V8's threads' way when the first TypeScript result is due.
 * @module
 */

/**
 * The module of the wasm `bytes` will hold, the same one for every call (see the module comment); `joinBackground`:
 * a call made while the background compile is under way waits for it rather than compile on the caller's thread.
 */
export function compiledEarly(bytes: Promise<BufferSource>, joinBackground = false): () => Promise<WebAssembly.Module> {
  let module: WebAssembly.Module | undefined;
  const background = bytes.then((read) => WebAssembly.compile(read));
  // A failure is the first run's to report (it awaits the same bytes, and this compile or its own).
  background.then(
    (compiled) => {
      module ??= compiled;
    },
    () => {},
  );
  return async () => {
    const read = await bytes;
    if (joinBackground) module ??= await background;
    module ??= new WebAssembly.Module(read);
    return module;
  };
}
