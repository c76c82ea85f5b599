/**
 * Fair shares of CPU between tenants: each tenant's `/run`s, `run_code` calls and processes draw fuel (the engine's
 * metered work, so the share holds where clocks stand still) from a token bucket per tenant, refilled at the tenant's
 * rate up to its burst. A run reserves its fuel cap (at most the burst) before it starts and settles when it ends: the
 * fuel it did not use goes back, and fuel past the reservation is owed. A run whose tenant's bucket cannot pay the
 * reservation waits briefly in the tenant's line, then is refused with a 429 whose `Retry-After` is the time until
 * the bucket can: a tenant's runaways wait their turn while other tenants' runs start at once. The bucket's arithmetic
 * is pure, and {@link TenantCpuBudget} keeps its buckets where it is told (in memory, the edge registry's SQLite).
 * @module
 */
import { FUEL_PER_MS } from "../../core/sandbox.js";
import type { CodeExecutionResult } from "../../core/types.js";
import { retryLater } from "../errors.js";
import type { Bucket } from "./quotas.js";

/** A tenant's share, in fuel. */
export interface CpuShare {
  fuelPerMinute: number;
  burstFuel: number;
}

/** The share of `cpuMsPerMinute` and `burstMs` in fuel. */
export const cpuShareOf = (cpuMsPerMinute: number, burstMs: number): CpuShare => ({
  fuelPerMinute: cpuMsPerMinute * FUEL_PER_MS,
  burstFuel: burstMs * FUEL_PER_MS,
});

/** The fuel in `bucket` (a full one when `undefined`) at `now`: refilled since its `at`, never past the burst. */
const refilled = (bucket: Bucket | undefined, share: CpuShare, now: number) =>
  Math.min(
    share.burstFuel,
    (bucket?.tokens ?? share.burstFuel) + (Math.max(0, now - (bucket?.at ?? now)) * share.fuelPerMinute) / 60_000,
  );

/**
 * Reserves `fuel` (at most the burst) from `bucket`: the bucket afterwards and what was reserved, `retryAfterSeconds`
 * `null`; or, when the bucket holds less, nothing reserved and the seconds until it holds enough.
 */
export function reserveFuel(
  bucket: Bucket | undefined,
  share: CpuShare,
  fuel: number,
  now: number,
): { bucket: Bucket; reserved: number; retryAfterSeconds: number | null } {
  const need = Math.min(fuel, share.burstFuel);
  const have = refilled(bucket, share, now);
  if (have < need) {
    return {
      bucket: { tokens: have, at: now },
      reserved: 0,
      retryAfterSeconds: ((need - have) * 60) / share.fuelPerMinute,
    };
  }
  return { bucket: { tokens: have - need, at: now }, reserved: need, retryAfterSeconds: null };
}

/** `bucket` once a run that reserved `reserved` has spent `used`: the rest back (within the burst), or the excess owed. */
export function settleFuel(
  bucket: Bucket | undefined,
  share: CpuShare,
  reserved: number,
  used: number,
  now: number,
): Bucket {
  return { tokens: Math.min(share.burstFuel, refilled(bucket, share, now) + reserved - used), at: now };
}

/**
 * The fuel a run that reserved `reserved` is settled at: its `fuelUsed`, and the `fuelRedone` of an attempt of it that
 * was run again (Node's default path), which the engine spent too. A run stopped from outside its thread (where clocks
 * run) tells no `fuelUsed`: it is charged the time it took, within its reservation.
 */
export function fuelSpentBy(result: CodeExecutionResult, reserved: number): number {
  return (result.fuelUsed ?? Math.min(reserved, result.durationMs * FUEL_PER_MS)) + (result.fuelRedone ?? 0);
}

/** What a host asks before and after it runs guest code for a tenant. */
export interface CpuBudget {
  /**
   * Reserves what a run that may spend `fuel` needs of `tenant`'s share; resolves with the amount reserved, or throws
   * a 429 `rate_limited` `HostError` with `Retry-After` when the tenant's bucket holds too little.
   */
  reserve(tenant: string, fuel: number): Promise<number>;
  /** Settles a reservation of `reserved` whose run spent `used` fuel, waking the tenant's line. */
  settle(tenant: string, reserved: number, used: number): Promise<void>;
}

/** How long a run may wait for its tenant's share before it is refused. */
export const MAX_CPU_WAIT_MS = 5_000;
/** Runs of one tenant that may wait for its share at once; past them a run is refused at once. */
const MAX_CPU_WAITERS = 64;

/** Where a {@link TenantCpuBudget} keeps its buckets: a map in memory, the edge registry's SQLite. */
interface BucketStore {
  get(tenant: string): Bucket | undefined;
  set(tenant: string, bucket: Bucket): void;
}

interface TenantCpuOptions {
  /** Default: a map in memory (tenants are the configured keys' few names). */
  buckets?: BucketStore;
  /** Epoch milliseconds of the buckets. Default `Date.now`. */
  now?: () => number;
  /** Default {@link MAX_CPU_WAIT_MS}; 0 refuses at once. */
  maxWaitMs?: number;
}

interface Waiter {
  fuel: number;
  resolve(reserved: number): void;
  /** Refused: its wait ran out. */
  deadline: ReturnType<typeof setTimeout>;
}

/**
 * {@link CpuBudget} with a short line per tenant: a run its tenant's bucket cannot pay for now waits, in order behind
 * the tenant's earlier ones, while a run of the tenant in flight may give fuel back or the refill pays within
 * `maxWaitMs`; each settlement and the refill's due time wake the line (no polling). Past the wait, or with nothing to
 * wait for, it is refused with the seconds until the bucket can pay. Tenants never wait for each other: each bucket
 * is its own.
 */
export class TenantCpuBudget implements CpuBudget {
  readonly #share: CpuShare;
  readonly #buckets: BucketStore;
  readonly #now: () => number;
  readonly #maxWaitMs: number;
  readonly #lines = new Map<string, Waiter[]>();
  /** Reservations not yet settled, by tenant: while there are some, fuel may come back. */
  readonly #inFlight = new Map<string, number>();
  /** The timer that wakes a tenant's line when the refill pays its first run. */
  readonly #refills = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(share: CpuShare, options: TenantCpuOptions = {}) {
    this.#share = share;
    const map = new Map<string, Bucket>();
    this.#buckets = options.buckets ?? { get: (tenant) => map.get(tenant), set: (tenant, b) => map.set(tenant, b) };
    this.#now = options.now ?? Date.now;
    this.#maxWaitMs = options.maxWaitMs ?? MAX_CPU_WAIT_MS;
  }

  async reserve(tenant: string, fuel: number): Promise<number> {
    const line = this.#lines.get(tenant) ?? [];
    let retryAfterSeconds = line.length === 0 ? this.#take(tenant, fuel) : this.#retryAfter(tenant, fuel);
    if (typeof retryAfterSeconds !== "number") return retryAfterSeconds.reserved;
    // Waiting is worth it while a run of the tenant may give fuel back, or the refill pays within the wait.
    const refundable = (this.#inFlight.get(tenant) ?? 0) > 0;
    if (
      this.#maxWaitMs === 0 ||
      line.length >= MAX_CPU_WAITERS ||
      (!refundable && retryAfterSeconds * 1000 > this.#maxWaitMs)
    ) {
      throw cpuExhausted(this.#share, retryAfterSeconds);
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        fuel,
        resolve,
        deadline: setTimeout(() => {
          const waiting = this.#lines.get(tenant) ?? [];
          waiting.splice(waiting.indexOf(waiter), 1);
          retryAfterSeconds = this.#retryAfter(tenant, fuel);
          this.#wake(tenant);
          reject(cpuExhausted(this.#share, retryAfterSeconds));
        }, this.#maxWaitMs),
      };
      this.#lines.set(tenant, [...line, waiter]);
      this.#wake(tenant);
    });
  }

  async settle(tenant: string, reserved: number, used: number): Promise<void> {
    this.#buckets.set(tenant, settleFuel(this.#buckets.get(tenant), this.#share, reserved, used, this.#now()));
    const left = (this.#inFlight.get(tenant) ?? 1) - 1;
    if (left <= 0) this.#inFlight.delete(tenant);
    else this.#inFlight.set(tenant, left);
    this.#wake(tenant);
  }

  /** Reserves `fuel` for `tenant` now: what was reserved, or the seconds until its bucket can pay. */
  #take(tenant: string, fuel: number): { reserved: number } | number {
    const { bucket, reserved, retryAfterSeconds } = reserveFuel(
      this.#buckets.get(tenant),
      this.#share,
      fuel,
      this.#now(),
    );
    this.#buckets.set(tenant, bucket);
    if (retryAfterSeconds !== null) return retryAfterSeconds;
    this.#inFlight.set(tenant, (this.#inFlight.get(tenant) ?? 0) + 1);
    return { reserved };
  }

  /** The seconds until `tenant`'s bucket can pay `fuel`, with nothing taken (0 when it can now). */
  #retryAfter(tenant: string, fuel: number): number {
    return reserveFuel(this.#buckets.get(tenant), this.#share, fuel, this.#now()).retryAfterSeconds ?? 0;
  }

  /** Admits the runs at the head of `tenant`'s line that its bucket pays for, and sets the refill's wake-up. */
  #wake(tenant: string): void {
    const refill = this.#refills.get(tenant);
    if (refill !== undefined) clearTimeout(refill);
    this.#refills.delete(tenant);
    const line = this.#lines.get(tenant) ?? [];
    while (line.length > 0) {
      const head = line[0] as Waiter;
      const taken = this.#take(tenant, head.fuel);
      if (typeof taken === "number") {
        this.#refills.set(
          tenant,
          setTimeout(() => this.#wake(tenant), Math.ceil(taken * 1000)),
        );
        return;
      }
      line.shift();
      clearTimeout(head.deadline);
      head.resolve(taken.reserved);
    }
    this.#lines.delete(tenant);
  }
}

/** The refusal of a run whose tenant has spent its share of CPU. */
function cpuExhausted(share: CpuShare, retryAfterSeconds: number) {
  return retryLater(
    "rate_limited",
    `This tenant has spent its share of CPU (${share.fuelPerMinute / FUEL_PER_MS} ms per minute, ${share.burstFuel / FUEL_PER_MS} ms at once): retry in ${Math.max(1, Math.ceil(retryAfterSeconds))} s`,
    retryAfterSeconds,
  );
}

/** A host's shares of CPU as a path that runs guest code takes them: the budget, and the fuel cap of a run. */
export interface CpuShares {
  budget: CpuBudget;
  /** The fuel a run with time limit `timeoutMs` may spend at most (its safety cap's). */
  fuelOf(timeoutMs: number): number;
}
