/**
 * Admission of runs by the linear memory their memory limits make them take: the runs in flight in one instance (an
 * isolate on the edge) never hold more together than a cap that fits it. A run that does not fit now waits in a
 * short line and gets 503 `overloaded` only when the line is full or its wait too long, never an instance that runs
 * out of memory. Each tenant's runs hold at most a share of the cap and wait in at most a share of the line, so
 * one tenant's traffic leaves room for another's runs, and the line is served in turns by tenant, not first come,
 * first served. Whatever ends a run's request (its answer, an error, a client
 * that went away) releases what the run holds or stops its wait: on Workers, a request that ended never runs its
 * code again. Where one request's code may resume another's (Node: {@link AdmissionCaps.wakeAcrossRequests}), a
 * waiting run is admitted the moment room frees for it, by whatever frees it; on Workers, which refuse that, each
 * waiting run looks for room on a timer of its own. `POST /run` and MCP's `run_code` share one admission per app.
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
  /**
   * Whether the end of one request's run may resume a run waiting in another request: then whatever frees room (a
   * release, a request that ended, a wait that ran out ahead, a hold taken back) admits the waiting runs that now
   * fit at once, and nothing polls (Node, one event loop). Workers refuse it (a promise of one request settled from
   * another's handler fails with "Cannot perform I/O on behalf of a different request"), so there, the default, each
   * waiting run looks for room every {@link ADMISSION_POLL_MS} on its own timer and takes it itself.
   */
  wakeAcrossRequests: boolean;
}

/** How often a waiting run looks for room where runs do not wake each other ({@link AdmissionCaps.wakeAcrossRequests}). */
const ADMISSION_POLL_MS = 5;

interface Waiter {
  tenant: string;
  memory: number;
  /** Takes room for the run once it fits, and ends its wait. */
  grant(): void;
}

/** Room a run holds. */
interface Hold {
  tenant: string;
  memory: number;
  /** When the room is taken back (epoch milliseconds of the admission's clock). */
  until: number;
  /** Gives the room back and lets the waiting runs that now fit in; a second call does nothing. */
  release(): void;
}

/**
 * Runs admitted by the linear memory they may take, in a line served in turns by tenant (see the module comment). A
 * waiting run's own signal and timers are touched only in its own request's continuations.
 */
export class RunAdmission {
  readonly caps: AdmissionCaps;
  readonly #now: () => number;
  #held = 0;
  readonly #heldBy = new Map<string, number>();
  /** The waiting runs, first come first. */
  readonly #waiting: Waiter[] = [];
  /** The tenants with runs waiting, in the order their turns come. */
  readonly #turns: string[] = [];
  /** Room held by runs admitted. */
  readonly #holds = new Set<Hold>();

  /** `now`: the clock of {@link AdmissionCaps.maxHoldMs}, epoch milliseconds; waits are timed by timers. */
  constructor(caps: Partial<AdmissionCaps> = {}, now: () => number = Date.now) {
    this.caps = {
      memoryBudgetBytes: caps.memoryBudgetBytes ?? RUN_MEMORY_CAP_BYTES,
      maxWaiting: caps.maxWaiting ?? MAX_WAITING_RUNS,
      maxWaitMs: caps.maxWaitMs ?? MAX_ADMISSION_WAIT_MS,
      tenantShare: caps.tenantShare ?? TENANT_SHARE,
      maxHoldMs: caps.maxHoldMs ?? MAX_HOLD_MS,
      wakeAcrossRequests: caps.wakeAcrossRequests ?? false,
    };
    this.#now = now;
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
    // Room that fell due goes first to the runs already waiting for it.
    if (this.#takeBack()) this.#wake();
    if (this.#fits(tenant, memory, this.#inTurns())) return Promise.resolve(bound(this.#take(tenant, memory), signal));
    if (this.#waiting.length >= maxWaiting) return Promise.reject(refuse(`${maxWaiting} runs wait already`));
    if (this.#waiting.filter((w) => w.tenant === tenant).length >= this.tenantMaxWaiting) {
      return Promise.reject(refuse(`${this.tenantMaxWaiting} runs of this tenant wait already`));
    }
    /** Set once the run has room or has stopped waiting: later timers and aborts of the wait do nothing. */
    let over = false;
    // Set in the promise's executor, which runs at once.
    let deadline!: ReturnType<typeof setTimeout>;
    /** The wait's other timer: its next look for room, or the due time of room held that it wakes the line at. */
    let timer: ReturnType<typeof setTimeout> | undefined;
    let aborted = () => {};
    const granted = new Promise<Hold>((resolve, reject) => {
      const waiter: Waiter = {
        tenant,
        memory,
        // Called by whatever freed the room, or by the run's own look for it.
        grant: () => {
          over = true;
          this.#leave(waiter);
          resolve(this.#take(tenant, memory));
        },
      };
      const giveUp = (error: unknown) => {
        over = true;
        this.#leave(waiter);
        reject(error);
        // The runs behind this one may fit now.
        this.#wake();
      };
      aborted = () => {
        if (!over) giveUp(signal.reason);
      };
      // A timer of its own: counting turns of a loaded event loop measured the wait 2-3 times too long.
      deadline = setTimeout(() => {
        if (!over) giveUp(refuse(`no room within ${maxWaitMs} ms`));
      }, maxWaitMs);
      // Room that nothing releases (a Worker request cancelled with its `finally`) is taken back by the clock: when runs
      // wake each other, this run's own timer wakes the line when the next room held falls due within its wait, each
      // hold's time once; otherwise it looks for room on its own timer, taking back what fell due.
      const dueWithinWait = (after: number) => {
        let next = Number.POSITIVE_INFINITY;
        for (const hold of this.#holds) if (hold.until > after && hold.until < next) next = hold.until;
        const ms = Math.max(0, next - this.#now());
        if (over || ms >= maxWaitMs) return;
        timer = setTimeout(() => {
          if (over) return;
          this.#takeBack();
          this.#wake();
          dueWithinWait(next);
        }, ms);
      };
      const look = () => {
        this.#takeBack();
        const line = this.#inTurns();
        if (this.#fits(tenant, memory, line.slice(0, line.indexOf(waiter)))) waiter.grant();
        else timer = setTimeout(look, ADMISSION_POLL_MS);
      };
      signal.addEventListener("abort", aborted, { once: true });
      this.#waiting.push(waiter);
      if (!this.#turns.includes(tenant)) this.#turns.push(tenant);
      if (this.caps.wakeAcrossRequests) dueWithinWait(Number.NEGATIVE_INFINITY);
      else timer = setTimeout(look, ADMISSION_POLL_MS);
    });
    // Resumed in the waiting request's own context: its timers and signal are its own to touch.
    const endWait = () => {
      clearTimeout(deadline);
      if (timer !== undefined) clearTimeout(timer);
      signal.removeEventListener("abort", aborted);
    };
    return granted.then(
      (hold) => {
        endWait();
        return bound(hold, signal);
      },
      (error: unknown) => {
        endWait();
        throw error;
      },
    );
  }

  /** Takes `waiter` off the line; a tenant with runs still waiting goes to the back of the turns. */
  #leave(waiter: Waiter): void {
    this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
    this.#turns.splice(this.#turns.indexOf(waiter.tenant), 1);
    if (this.#waiting.some((w) => w.tenant === waiter.tenant)) this.#turns.push(waiter.tenant);
  }

  /** Admits, in the line's order, every waiting run that fits now, where runs wake each other. */
  #wake(): void {
    if (!this.caps.wakeAcrossRequests) return;
    const ahead: Waiter[] = [];
    for (const waiter of this.#inTurns()) {
      if (this.#fits(waiter.tenant, waiter.memory, ahead)) waiter.grant();
      else ahead.push(waiter);
    }
  }

  /** Takes back the room held past {@link AdmissionCaps.maxHoldMs}; whether there was any. */
  #takeBack(): boolean {
    const now = this.#now();
    let any = false;
    for (const hold of this.#holds) if (hold.until <= now) any = this.#free(hold) || any;
    return any;
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
    if (this.#held + memory > this.caps.memoryBudgetBytes) return false;
    if ((this.#heldBy.get(tenant) ?? 0) + memory > this.tenantQuotaBytes) return false;
    for (const earlier of ahead) {
      if (earlier.tenant === tenant) return false;
      if ((this.#heldBy.get(earlier.tenant) ?? 0) + earlier.memory <= this.tenantQuotaBytes) return false;
    }
    return true;
  }

  #take(tenant: string, memory: number): Hold {
    this.#held += memory;
    this.#heldBy.set(tenant, (this.#heldBy.get(tenant) ?? 0) + memory);
    const hold: Hold = {
      tenant,
      memory,
      until: this.#now() + this.caps.maxHoldMs,
      release: () => {
        if (!this.#free(hold)) return;
        this.#wake();
      },
    };
    this.#holds.add(hold);
    return hold;
  }

  /** Gives `hold`'s room back; `false` when it was given back already. */
  #free(hold: Hold): boolean {
    if (!this.#holds.delete(hold)) return false;
    this.#held -= hold.memory;
    const left = (this.#heldBy.get(hold.tenant) as number) - hold.memory;
    if (left === 0) this.#heldBy.delete(hold.tenant);
    else this.#heldBy.set(hold.tenant, left);
    return true;
  }
}

/** `hold`'s release, also called when `signal` (its request's) aborts: at once if it has already. */
function bound(hold: Hold, signal: AbortSignal): () => void {
  const release = () => {
    signal.removeEventListener("abort", release);
    hold.release();
  };
  if (signal.aborted) release();
  else signal.addEventListener("abort", release, { once: true });
  return release;
}
