/**
 * A stand-in for the core's sessions behind the `SessionEngine` port, so the service's bookkeeping is tested alone:
 * a session's state is a plain object, a cell is a JavaScript expression over it (`state.x = 41`, `state.x + 1`,
 * a promise for a slow cell), its snapshot the state's wire JSON. It counts creations, restores, closes and the cells
 * running at once.
 */
import type { CodeExecution, CodeExecutionResult } from "../../../src/core/types.js";
import type {
  EngineCellOptions,
  EngineSession,
  EngineSessionOptions,
  SessionEngine,
} from "../../../src/host/sessions/engine.js";
import { fromWire, toWireText } from "../../../src/values/wire.js";

export interface FakeEngine extends SessionEngine {
  created: number;
  restored: number;
  closed: number;
  /** The most cells ever running at once, across sessions of one id (`maxRunning`). */
  maxRunning: number;
  /** The options of every creation and restore. */
  options: EngineSessionOptions[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function fakeEngine(): FakeEngine {
  let running = 0;
  const engine: FakeEngine = {
    created: 0,
    restored: 0,
    closed: 0,
    maxRunning: 0,
    options: [],
    async create(options) {
      engine.created++;
      engine.options.push(options);
      return session({ ...(options.globals ?? {}) }, 0);
    },
    async restore(bytes, options) {
      engine.restored++;
      engine.options.push(options);
      const { state, cells } = fromWire(JSON.parse(decoder.decode(bytes))) as {
        state: Record<string, unknown>;
        cells: number;
      };
      return session(state, cells);
    },
  };
  const session = (state: Record<string, unknown>, cellsBefore: number): EngineSession => {
    let cells = cellsBefore;
    let closed = false;
    return {
      run(cell: string, options: EngineCellOptions = {}): CodeExecution {
        if (closed) throw new Error("closed");
        cells++;
        running++;
        engine.maxRunning = Math.max(engine.maxRunning, running);
        let stop!: (reason: string) => void;
        const stopped = new Promise<CodeExecutionResult>((resolve) => {
          stop = (reason) =>
            resolve({
              status: "terminated",
              reports: [],
              logs: [],
              error: { name: "Terminated", message: reason },
              durationMs: 0,
            });
        });
        options.signal?.addEventListener("abort", () => stop("The request ended"));
        const evaluated = (async (): Promise<CodeExecutionResult> => {
          try {
            const value = await new Function("state", `return (${cell});`)(state);
            options.onLog?.({ level: "log", args: [value], timestamp: 0 });
            return { status: "success", result: value, reports: [], logs: [], durationMs: 1, fuelUsed: 7 };
          } catch (error) {
            return {
              status: "error",
              reports: [],
              logs: [],
              error: { name: "Error", message: String(error) },
              durationMs: 1,
            };
          }
        })();
        const settled = Promise.race([evaluated, stopped]).finally(() => {
          running--;
        });
        return Object.assign(settled, {
          terminate: (reason = "terminated") => stop(reason),
          running: true,
          reports: [],
        });
      },
      async snapshot() {
        return encoder.encode(toWireText({ state, cells }));
      },
      async fork() {
        throw new Error("the service forks by its stored snapshot");
      },
      close() {
        if (!closed) engine.closed++;
        closed = true;
      },
      get cells() {
        return cells;
      },
      get memoryBytes() {
        return toWireText(state).length;
      },
    };
  };
  return engine;
}
