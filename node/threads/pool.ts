/**
 * The worker threads of the threaded sandbox, shared by every threaded sandbox of the process: one run per worker
 * at a time (so ending a worker never takes another run with it), idle workers kept warm, a run that finds none
 * waiting in a queue (bounded by {@link MAX_QUEUED_RUNS}) for a worker to come free, more spawned on demand up
 * to {@link MAX_THREADS}, and a replacement spawned for every worker that was ended or crashed.
 *
 * Waiting runs take the workers in turns by tenant (`options.tenant`; runs without one are one tenant, the library's
 * caller): a worker that comes free goes to the waiting run of the tenant holding the fewest workers, the first come
 * among ties. One tenant's backlog so delays another's run by one run's end at most, not by the backlog.
 *
 * Runs doing guest work at once are kept to the machine's cores ({@link CPU_SLOTS}): an unrelated run that finds
 * that many workers computing waits for one of them rather than take another worker or spawn one, since more would
 * only share the cores, the caller's thread among them (32 trivial runs at once went from 3,300 to 7,300 runs/s on
 * two cores with two workers instead of eight). Runs waiting for the host do not count; and when no worker has
 * come free for {@link CPU_WAIT_MS} (long runs hold the cores) and none is starting, a waiting run takes another
 * worker all the same.
 *
 * A run started inside a host call of a run on a thread is nested one level deeper, under the same root run (told
 * by the caller's thread's async context, as host functions run there). Its parent holds a worker while it awaits,
 * so nested runs never wait for the workers of unrelated runs: each root's first level of nested runs has a worker
 * of its own (one at a time, up to {@link MAX_THREADS} roots), so one root's spinning nested run never holds up
 * another root's; deeper runs share {@link MAX_NESTING_DEPTH} - 1 more, of which runs nested `d` deep or less hold
 * fewer than `d - 1`, and the deepest waiting run goes first. A deeper run can then always get a worker, so a chain
 * of nested runs always ends. Idle workers beyond {@link MAX_THREADS} are ended once no nested run holds or waits
 * for one. A nested run never outlives its parent: the parent's end ends it (see `Caller.adopt` in host-calls.ts).
 * @module
 */
import { CPU_SLOTS, CPU_WAIT_MS, MAX_NESTING_DEPTH, MAX_QUEUED_RUNS, MAX_THREADS, queueFull } from "./limits.js";
import type { WarmInstance } from "./protocol.js";
import { Thread } from "./thread.js";

/** Most workers alive at once: those of unrelated runs, the first level of nested runs, the deeper ones. */
const MAX_WORKERS = 2 * MAX_THREADS + MAX_NESTING_DEPTH - 1;

/** A run waiting for a thread. */
export interface Waiting {
  readonly depth: number;
  /** See {@link Caller.root}. */
  readonly root: object;
  /** Who its work counts for (`options.tenant`); `undefined`: the library's caller. */
  readonly tenant: string | undefined;
  start(thread: Thread): void;
  /** No thread will come: the worker spawned for it could not start. */
  lost(reason: string): void;
}

/** What a new worker readies itself for: runs like the latest (see the `warm` message). */
interface Latest {
  wasm: WebAssembly.Module;
  /** `undefined` when their instances are not restored. */
  instance: WarmInstance | undefined;
  swc: WebAssembly.Module | undefined;
}

class ThreadPool {
  readonly #threads = new Set<Thread>();
  readonly #idle: Thread[] = [];
  /** Runs waiting for a thread, the deepest first, then in the order they came (unrelated ones go by tenant). */
  readonly #queue: Waiting[] = [];
  /** Workers spawned that have not loaded yet. */
  #starting = 0;
  #latest: Latest | undefined;
  /** When a worker last came free, or a run last went beyond the cores (`performance.now()`). */
  #freed = 0;
  /** Dispatches again when a run kept waiting for a computing worker has waited long enough. */
  #recheck: ReturnType<typeof setTimeout> | undefined;

  /**
   * Gives `run` an idle thread, or queues it for the first thread free: a run that finishes or a worker spawned for
   * it (the run takes whichever comes first, a warm worker usually). Throws a `RangeError` when the queue is full.
   */
  submit(run: Waiting): void {
    const at = this.#queue.findIndex((waiting) => waiting.depth < run.depth);
    this.#queue.splice(at === -1 ? this.#queue.length : at, 0, run);
    this.#dispatch();
    // Unrelated and nested runs wait within a bound each, so a guest's fan-out of nested runs never fills the line
    // of unrelated ones. Runs that a starting worker, or for unrelated runs a worker of theirs not yet busy, will
    // take are not beyond the bound.
    const nested = run.depth > 0;
    let waiting = 0;
    for (const other of this.#queue) if (other.depth > 0 === nested) waiting++;
    let free = this.#starting;
    if (!nested) {
      free = MAX_THREADS;
      for (const thread of this.#threads) if (thread.holder?.depth === 0) free--;
    }
    if (waiting > MAX_QUEUED_RUNS + free && this.#queue.includes(run)) {
      this.withdraw(run);
      throw queueFull(nested);
    }
  }

  /** Takes a run that has not got a thread off the queue. */
  withdraw(run: Waiting): void {
    const at = this.#queue.indexOf(run);
    if (at !== -1) this.#queue.splice(at, 1);
  }

  /** A thread whose run is over, fit for the next: the next run takes the thread that ran last (the warmest). */
  release(thread: Thread, warm = true): void {
    thread.holder = undefined;
    if (!thread.alive) return;
    this.#freed = performance.now();
    thread.hold(false);
    if (warm) this.#idle.push(thread);
    else this.#idle.unshift(thread);
    this.#dispatch();
  }

  /** Whether `thread`'s run is the only one in flight: no other holds a worker or waits for one. */
  alone(thread: Thread): boolean {
    if (this.#queue.length > 0) return false;
    for (const other of this.#threads) if (other !== thread && other.holder !== undefined) return false;
    return true;
  }

  /** Notes what runs look like, for warming new workers. */
  uses(latest: Latest): void {
    this.#latest = latest;
  }

  /**
   * Gives idle threads to the waiting runs that may hold one (nested runs first, then unrelated runs by tenant),
   * spawns workers for those left, and ends idle workers beyond {@link MAX_THREADS} once nesting is over.
   */
  #dispatch(): void {
    const held = new Holdings();
    let computing = 0;
    for (const thread of this.#threads) {
      if (thread.holder === undefined) continue;
      held.add(thread.holder);
      if (thread.computing) computing++;
    }
    let unserved = 0;
    /** Runs granted a worker that is not there yet: they keep their place in the queue until one is. */
    const granted = new Set<Waiting>();
    const grant = (run: Waiting, at: number): void => {
      held.add(run);
      computing++;
      const thread = this.#idle.pop();
      if (thread === undefined) {
        unserved++;
        granted.add(run);
        return;
      }
      this.#queue.splice(at, 1);
      thread.hold(true);
      run.start(thread);
    };
    // Nested runs never wait for the cores: their parents wait on them.
    for (let i = 0; i < this.#queue.length; i++) {
      const run = this.#queue[i] as Waiting;
      if (run.depth === 0) break;
      if (!held.mayNest(run)) continue;
      const before = this.#queue.length;
      grant(run, i);
      if (this.#queue.length < before) i--;
    }
    const at = performance.now();
    let recheck = false;
    while (held.unrelated < MAX_THREADS) {
      const next = this.#nextUnrelated(held, granted);
      if (next === -1) break;
      // Unrelated runs keep to the cores (see CPU_SLOTS).
      if (computing >= CPU_SLOTS) {
        // A worker still starting will take a run soon (and dispatch again); past the wait, one run at a time goes
        // beyond the cores. A worker whose run starts waiting for the host says nothing: the recheck notices.
        if (this.#starting > 0) break;
        if (at - this.#freed < CPU_WAIT_MS) {
          recheck = true;
          break;
        }
        this.#freed = at;
      }
      grant(this.#queue[next] as Waiting, next);
    }
    while (this.#starting < unserved && this.#alive() < MAX_WORKERS) this.#spawn();
    for (const thread of this.#threads) if (thread.alive && !thread.started) thread.hold(unserved > 0);
    if (recheck) this.#recheckAt(this.#freed + CPU_WAIT_MS);
    // Once no nested run holds or waits for a worker, those beyond MAX_THREADS are ended: a burst of nesting does
    // not keep their memory, and workers are not ended and spawned again between the nested runs of one burst.
    const nesting = held.nested > 0 || this.#queue.some((run) => run.depth > 0);
    while (!nesting && this.#idle.length > 0 && this.#alive() > MAX_THREADS) this.#idle.shift()?.end();
  }

  /**
   * Where in the queue the unrelated run to serve next is, -1 for none: the first come of the tenant holding the
   * fewest workers, of the runs not `granted` already.
   */
  #nextUnrelated(held: Holdings, granted: Set<Waiting>): number {
    let next = -1;
    let fewest = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.#queue.length; i++) {
      const run = this.#queue[i] as Waiting;
      if (run.depth > 0 || granted.has(run)) continue;
      const count = held.ofTenant(run.tenant);
      if (count < fewest) {
        next = i;
        fewest = count;
      }
    }
    return next;
  }

  /** Dispatches again at `at` (`performance.now()`), unless a dispatch is due sooner; never holds the process. */
  #recheckAt(at: number): void {
    if (this.#recheck !== undefined) return;
    this.#recheck = setTimeout(
      () => {
        this.#recheck = undefined;
        this.#dispatch();
      },
      Math.max(0, at - performance.now()),
    );
    this.#recheck.unref();
  }

  #alive(): number {
    let alive = 0;
    for (const thread of this.#threads) if (thread.alive) alive++;
    return alive;
  }

  /** A new worker: idle once it has loaded, readied then for runs like the latest unless a run takes it at once. */
  #spawn(): void {
    this.#starting++;
    const thread: Thread = new Thread(
      () => {
        this.#starting--;
        this.release(thread, false);
        if (thread.holder === undefined) this.#warm(thread);
      },
      () => this.#replace(thread),
    );
    this.#threads.add(thread);
  }

  /** Readies a loaded worker, once, for runs like the latest. */
  #warm(thread: Thread): void {
    const latest = this.#latest;
    if (latest === undefined || !thread.started || thread.warmed) return;
    thread.warmed = true;
    const { wasm, instance, swc } = latest;
    thread.post({
      kind: "warm",
      wasm: thread.wasmRef(wasm),
      ...(instance === undefined ? {} : { instance }),
      ...(swc === undefined ? {} : thread.swcRef(swc)),
    });
  }
  /**
   * A worker that had started is replaced while fewer than {@link MAX_THREADS} remain; one that could not start is
   * only when runs wait (so a script that fails to load is not spawned in a loop), and the first waiting run gets
   * the error.
   */
  #replace(gone: Thread): void {
    this.#threads.delete(gone);
    const at = this.#idle.indexOf(gone);
    if (at !== -1) this.#idle.splice(at, 1);
    if (!gone.started) {
      this.#starting--;
      this.#queue.shift()?.lost(gone.exitReason);
    }
    if (gone.started && this.#alive() < MAX_THREADS) this.#spawn();
    this.#dispatch();
  }
}

/** The workers held, counted as the pool's rules count them. */
class Holdings {
  /** Held by unrelated runs (depth 0). */
  unrelated = 0;
  /** Held by nested runs. */
  nested = 0;
  /** Held by unrelated runs, by tenant. */
  readonly #tenants = new Map<string | undefined, number>();
  /** Held by the first level of nested runs, by root. */
  readonly #firsts = new Map<object, number>();
  #firstCount = 0;
  /** Held by deeper nested runs, by depth. */
  readonly #deeper = new Array<number>(MAX_NESTING_DEPTH + 1).fill(0);

  add(run: { depth: number; root: object; tenant: string | undefined }): void {
    if (run.depth === 0) {
      this.unrelated++;
      this.#tenants.set(run.tenant, this.ofTenant(run.tenant) + 1);
      return;
    }
    this.nested++;
    if (run.depth === 1) {
      this.#firsts.set(run.root, (this.#firsts.get(run.root) ?? 0) + 1);
      this.#firstCount++;
    } else (this.#deeper[run.depth] as number)++;
  }

  ofTenant(tenant: string | undefined): number {
    return this.#tenants.get(tenant) ?? 0;
  }

  /**
   * Whether nested `run` may hold one more worker: at the first level, while its root's other first-level runs hold
   * none (and fewer than {@link MAX_THREADS} roots hold one); deeper, while the runs nested `depth` deep or less,
   * from the second level on, hold fewer than `depth - 1`.
   */
  mayNest(run: Waiting): boolean {
    if (run.depth === 1) return !this.#firsts.has(run.root) && this.#firstCount < MAX_THREADS;
    let deeper = 0;
    for (let d = 2; d <= run.depth; d++) deeper += this.#deeper[d] as number;
    return deeper < run.depth - 1;
  }
}

/** The process's pool. */
export const threadPool = new ThreadPool();
