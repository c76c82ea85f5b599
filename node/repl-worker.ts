/**
 * The worker thread holding the REPL's session (see node/repl-thread.ts): makes, restores, runs and snapshots it as
 * the REPL's thread asks, one request at a time, and reads the shared interrupt flag at every yield point of a cell.
 * @module
 */
import { parentPort, workerData } from "node:worker_threads";
import { type CodeExecution, createSession, restoreSession, type Session } from "./index.js";
import type { FromReplWorker, ReplWorkerData, ToReplWorker } from "./repl-thread.js";

const port = parentPort as NonNullable<typeof parentPort>;
const { settings, interrupt } = workerData as ReplWorkerData;
const flag = new Int32Array(interrupt);
const options = { ...settings, interrupted: () => Atomics.load(flag, 0) === 1 };
let session: Session | undefined;
let running: CodeExecution | undefined;

const post = (message: FromReplWorker) => port.postMessage(message);

async function answer(message: Exclude<ToReplWorker, { type: "terminate" }>): Promise<FromReplWorker> {
  switch (message.type) {
    case "open": {
      const next =
        message.snapshot === undefined ? await createSession(options) : await restoreSession(message.snapshot, options);
      session?.close();
      session = next;
      return { type: "opened" };
    }
    case "run": {
      const { source, language, timeoutMs } = message.cell;
      running = (session as Session).run(source, {
        language,
        timeoutMs,
        onLog: (entry) => post({ type: "log", entry }),
      });
      try {
        return { type: "result", result: await running };
      } finally {
        running = undefined;
      }
    }
    case "snapshot":
      return { type: "snapshot", bytes: await (session as Session).snapshot() };
  }
}

port.on("message", (message: ToReplWorker) => {
  if (message.type === "terminate") {
    running?.terminate();
    return;
  }
  answer(message).then(post, (error: Error & { code?: string }) =>
    post({
      type: "failed",
      error: { name: error.name, message: error.message, ...(error.code === undefined ? {} : { code: error.code }) },
    }),
  );
});
