/**
 * Admission of runs by the linear memory their memory limits make them take: the runs in flight in one instance (an
 * isolate on the edge) never hold more together than a cap that fits it. A run that does not fit now waits in a
 * short line and gets 503 `overloaded` only when the line is full or its wait too long, never an instance that runs
 * out of memory. Each tenant's runs hold at most a share of the cap and wait in at most a share of the line, so
 * one tenant's traffic leaves room for another's runs, and the line is served in turns by tenant, not first come,
 * first served. Whatever ends a run's request (its answer, an error, a client
 * that went away) releases what the run holds or stops its wait: on Workers, a request that ended never runs its
 * code again. `POST /run` and MCP's `run_code` share one admission per app.
 * @module
 */
import { linearMemoryBytes } from "../../core/engine.js";
import { HostError, retryLater } from "../errors.js";
import { MAX_RUN_TIMEOUT_MS } from "../limits.js";

/**
 * Linear memory the runs in flight in one instance may hold together. With a 128 MB Worker isolate: two runs at the
 * edge's 32 MiB default (36 MiB of linear memory each), or four at 12 MiB or less (16 MiB, the least an instance
 * takes), leaving 56 MiB to the host (the engine's code, the TypeScript compiler, requests and answers). The edge
 * bounds the booted instances kept idle for the next runs by the same cap (`InstancePool.limitMemory`): they give
 * way to runs in flight.
 */
export const RUN_MEMORY_CAP_BYTES = 72 * 1024 * 1024;
/** Memory limit of a `/run` that sets none: a tenant's share of the cap, which holds two such runs. */
export const RUN_DEFAULT_MEMORY_BYTES = 32 * 1024 * 1024;
/** Runs that may wait for room at once; past them a run is refused at once. */
const MAX_WAITING_RUNS = 64;
/** How long a run may wait for room before it is refused. */
const MAX_ADMISSION_WAIT_MS = 10_000;
/**
 * The part of the cap one tenant's runs may hold together, and of the line's places they may take: with half,
 * a tenant's runs within their share always leave room for a run at the edge's default memory limit of any other tenant.
 */
const TENANT_SHARE = 0.5;
/**
 * Longest a run holds its room: past it the room is taken back though nothing released it, as on Workers a request
 * whose client went away may be cancelled, and then none of its code runs again (a `finally` included). Twice as
 * long as any run may last.
 */
const MAX_HOLD_MS = 2 * MAX_RUN_TIMEOUT_MS;
/** What a 503 `overloaded` asks the client to wait, in seconds: runs last seconds. */
const OVERLOADED_RETRY_SECONDS = 1;

export interface AdmissionCaps {
  /** Default {@link RUN_MEMORY_CAP_BYTES}. */
  memoryBudgetBytes: number;
  /** Default {@link MAX_WAITING_RUNS}. */
  maxWaiting: number;
  /** Default {@link MAX_ADMISSION_WAIT_MS}. */
  maxWaitMs: number;
  /** Default {@link TENANT_SHARE}. */
  tenantShare: number;
  /** Default {@link MAX_HOLD_MS}. */
  maxHoldMs: number;
}

/**
 * How often a waiting run looks for room. Each waiter takes room from its own timer, never from the release of
 * another run: on Workers a promise resumed from another request's handler could not touch its own request's I/O.
 */
const ADMISSION_POLL_MS = 5;

interface Waiter {
  tenant: string;
  memory: number;
}

interface Hold extends Waiter {
  /** When the room is taken back (epoch milliseconds). */
  until: number;
  release(): void;
}

export class RunAdmission {
  readonly caps: AdmissionCaps;
  #held = 0;
  readonly #heldBy = new Map<string, number>();
  /** The waiting runs, first come first. */
  readonly #waiting: Waiter[] = [];
  /** The tenants with runs waiting, in the order their turns come. */
  readonly #turns: string[] = [];
  readonly #holds = new Set<Hold>();

  constructor(caps: Partial<AdmissionCaps> = {}) {
    this.caps = {
      memoryBudgetBytes: caps.memoryBudgetBytes ?? RUN_MEMORY_CAP_BYTES,
      maxWaiting: caps.maxWaiting ?? MAX_WAITING_RUNS,
      maxWaitMs: caps.maxWaitMs ?? MAX_ADMISSION_WAIT_MS,
      tenantShare: caps.tenantShare ?? TENANT_SHARE,
      maxHoldMs: caps.maxHoldMs ?? MAX_HOLD_MS,
    };
  }

  /** Linear memory one tenant's runs may hold together. */
  get tenantQuotaBytes(): number {
    return Math.floor(this.caps.memoryBudgetBytes * this.caps.tenantShare);
  }

  /** Places in the line one tenant's runs may take. */
  get tenantMaxWaiting(): number {
    return Math.ceil(this.caps.maxWaiting * this.caps.tenantShare);
  }

  /**
   * Holds the linear memory of `tenant`'s run limited to `heapLimitBytes` until the returned release or until `signal`
   * (its request's) aborts, once it fits; a 503 `overloaded` when the line or the tenant's part of it is full or the
   * wait runs out; a 400 `invalid_request` for a run larger than a tenant's share; the signal's reason when it aborts
   * first.
   */
  admit(heapLimitBytes: number, tenant: string, signal: AbortSignal): Promise<() => void> {
    const memory = linearMemoryBytes(heapLimitBytes);
    const { memoryBudgetBytes, maxWaiting, maxWaitMs } = this.caps;
    const refuse = (why: string) =>
      retryLater(
        "overloaded",
        `Runs in flight here hold ${this.#held} of ${memoryBudgetBytes} bytes of linear memory, and this one needs ${memory}: ${why}; retry shortly`,
        OVERLOADED_RETRY_SECONDS,
      );
    if (signal.aborted) return Promise.reject(signal.reason);
    if (memory > this.tenantQuotaBytes) {
      // Never admitted, so not worth a retry.
      return Promise.reject(
        new HostError(
          "invalid_request",
          `This run needs ${memory} bytes of linear memory, more than one tenant's runs may hold here (${this.tenantQuotaBytes}): ask for a smaller memoryLimitBytes`,
        ),
      );
    }
    if (this.#fits(tenant, memory, this.#inTurns())) return Promise.resolve(this.#take(tenant, memory, signal));
    if (this.#waiting.length >= maxWaiting) return Promise.reject(refuse(`${maxWaiting} runs wait already`));
    if (this.#waiting.filter((w) => w.tenant === tenant).length >= this.tenantMaxWaiting) {
      return Promise.reject(refuse(`${this.tenantMaxWaiting} runs of this tenant wait already`));
    }
    const waiter = { tenant, memory };
    this.#waiting.push(waiter);
    if (!this.#turns.includes(tenant)) this.#turns.push(tenant);
    return new Promise((resolve, reject) => {
      let poll: ReturnType<typeof setTimeout>;
      const leave = () => {
        clearTimeout(poll);
        clearTimeout(deadline);
        signal.removeEventListener("abort", aborted);
        this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
        const turn = this.#turns.indexOf(tenant);
        this.#turns.splice(turn, 1);
        // A tenant with runs still waiting goes to the back: its next run waits for every other tenant's.
        if (this.#waiting.some((w) => w.tenant === tenant)) this.#turns.push(tenant);
      };
      const aborted = () => {
        leave();
        reject(signal.reason);
      };
      // A timer of its own: counting polls measured the wait in turns of a loaded event loop, 2-3 times too long.
      const deadline = setTimeout(() => {
        leave();
        reject(refuse(`no room within ${maxWaitMs} ms`));
      }, maxWaitMs);
      const look = () => {
        const line = this.#inTurns();
        if (this.#fits(tenant, memory, line.slice(0, line.indexOf(waiter)))) {
          leave();
          resolve(this.#take(tenant, memory, signal));
        } else poll = setTimeout(look, ADMISSION_POLL_MS);
      };
      signal.addEventListener("abort", aborted, { once: true });
      poll = setTimeout(look, ADMISSION_POLL_MS);
    });
  }

  /** The line in the order it is served: each tenant's first waiting run by turn, then each one's second, ... */
  #inTurns(): Waiter[] {
    const lines = this.#turns.map((tenant) => this.#waiting.filter((w) => w.tenant === tenant));
    const ordered: Waiter[] = [];
    for (let rank = 0; ordered.length < this.#waiting.length; rank++) {
      for (const line of lines) if (rank < line.length) ordered.push(line[rank] as Waiter);
    }
    return ordered;
  }

  /**
   * Whether a run of `tenant` needing `memory`, behind the runs `ahead` of it in the line, may take room now. Within a
   * tenant runs go in order; a run passes another tenant's only when that one waits for its own tenant's share, not
   * for room overall: so a large run is not passed over forever by small ones, and one tenant's full share holds
   * nobody else back.
   */
  #fits(tenant: string, memory: number, ahead: readonly Waiter[]): boolean {
    const now = Date.now();
    for (const hold of this.#holds) if (hold.until <= now) hold.release();
    if (this.#held + memory > this.caps.memoryBudgetBytes) return false;
    if ((this.#heldBy.get(tenant) ?? 0) + memory > this.tenantQuotaBytes) return false;
    for (const earlier of ahead) {
      if (earlier.tenant === tenant) return false;
      if ((this.#heldBy.get(earlier.tenant) ?? 0) + earlier.memory <= this.tenantQuotaBytes) return false;
    }
    return true;
  }

  #take(tenant: string, memory: number, signal: AbortSignal): () => void {
    this.#held += memory;
    this.#heldBy.set(tenant, (this.#heldBy.get(tenant) ?? 0) + memory);
    const hold: Hold = {
      tenant,
      memory,
      until: Date.now() + this.caps.maxHoldMs,
      release: () => {
        if (!this.#holds.delete(hold)) return;
        signal.removeEventListener("abort", hold.release);
        this.#held -= memory;
        const left = (this.#heldBy.get(tenant) as number) - memory;
        if (left === 0) this.#heldBy.delete(tenant);
        else this.#heldBy.set(tenant, left);
      },
    };
    this.#holds.add(hold);
    signal.addEventListener("abort", hold.release, { once: true });
    return hold.release;
  }
}
