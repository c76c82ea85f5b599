/**
 * Which run's host function the caller's thread is calling, told by its async context: a run started there is nested
 * in that run (pool.ts's rules, `MAX_NESTING_DEPTH`), whether that run is on a worker (remote-run.ts) or attempted on
 * this thread (in-thread-first.ts). Apart from the pool, which loads with the first run that needs a worker, since an
 * attempt's host calls need it before then.
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Ending } from "../../src/core/runner-port.js";
import { MAX_NESTING_DEPTH } from "./limits.js";

/** A run on a thread as the runs its host functions start see it. */
export interface Caller {
  readonly depth: number;
  /** The run at depth 0 of its chain (itself at depth 0): its nested runs share one claim on the workers. */
  readonly root: object;
  /**
   * Takes `nested`, started by one of its host functions, as its own: the caller's end (whatever ends it) ends
   * `nested`. `false` when the caller is already over: `nested` must not run.
   */
  adopt(nested: Nested): boolean;
}

/** A nested run as its caller ends it. */
export interface Nested {
  readonly ended: Promise<Ending>;
  /** Ends the run as `terminated`: the run that started it is over. */
  orphan(): void;
}

/** The run whose host function is being called on this thread. */
const hostCalls = new AsyncLocalStorage<Caller>();

/** Calls `fn` as a host function of `caller`: runs it starts are nested one level deeper, under the same root. */
export function asHostCall<T>(caller: Caller, fn: () => T): T {
  return hostCalls.run(caller, fn);
}

/**
 * The run whose host function starts a run here, `undefined` outside host calls. Throws a `RangeError` when the run
 * started would nest past {@link MAX_NESTING_DEPTH}.
 */
export function hostCaller(): Caller | undefined {
  const caller = hostCalls.getStore();
  const depth = caller === undefined ? 0 : caller.depth + 1;
  if (depth > MAX_NESTING_DEPTH) {
    throw new RangeError(
      `runCode: runs nest at most ${MAX_NESTING_DEPTH} deep through host functions; this one would be ${depth} deep`,
    );
  }
  return caller;
}
