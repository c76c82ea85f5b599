/**
 * `runcode serve`'s sessions: the `SessionService` over the libSQL store, its cells run in-thread by the Node entry's
 * `createSession` and `restoreSession` with the sandbox settings of `POST /run` (fuel bounds a cell's CPU without a
 * thread). The engine port is where they would move to a worker thread.
 * @module
 */
import type { SandboxOptions } from "../../src/core/types.js";
import type { SessionEngine } from "../../src/host/sessions/engine.js";
import { createSession, restoreSession } from "../index.js";

/** Sessions made on the caller's thread with `sandbox`'s settings. */
export function inThreadSessions(sandbox: SandboxOptions): SessionEngine {
  return {
    create: (options) => createSession({ ...sandbox, ...options }),
    restore: (bytes, options) => restoreSession(bytes, { ...sandbox, ...options }),
  };
}
