/**
 * What stops one run, and the accounting behind it: the caller's terminate and an outside stop, the safety cap
 * (guest CPU time and fuel, the engine's metered work), the bytes of logs and reports the host keeps for the run,
 * and faults of the host (an exception out of a VM call leaves the instance untrustworthy). The run asks here at
 * every yield point; the engine asks through the interrupt handler and, metered, whenever its fuel runs out.
 * @module
 */
import { FUEL_QUANTUM, type Meter } from "./engine.js";
import { type Stop, Stopped } from "./outcome.js";
import { terminatedError } from "./result.js";
import type { CodeExecutionError, SafetyCap } from "./types.js";

interface LimitSettings {
  safetyCap: SafetyCap;
  clock: () => number;
  /** An outside stop (see `SandboxOptions.interrupted`). */
  interrupted: () => boolean;
  /** `true` once the handle settled (terminated by the caller): everything after is ignored. */
  settled: () => boolean;
  memoryLimitBytes: number;
}

/**
 * Bookkeeping the host adds to each log entry and report it keeps, on top of its tape's length. Logs and reports
 * live in host memory, out of reach of the run's capped linear memory: without a budget a guest printing the same
 * 1 MB string in a loop made the host hold 800 MB in two seconds of guest time.
 */
const RETAINED_ENTRY_BYTES = 64;

/**
 * Fuel a stopped run may spend to end on its own, at the engine's next interrupt poll (every ~10,000 bytecode
 * calls or back-edges: ~50,000 units in a tight loop), before the hard stop. A native that never polls takes the
 * hard stop.
 */
export const STOP_GRACE_FUEL = 1_000_000;
/**
 * Fuel an interrupt poll stands for where the engine has no meter (a wasm built without it): the work between two
 * polls ranged from ~20,000 to unbounded units (a native call is one tick whatever it does), so there fuel is no
 * bound on native work.
 */
const UNMETERED_POLL_FUEL = 50_000;

/**
 * Fuel per millisecond of CPU time. A million units took 1.2-5.1 ms of CPU across a catalogue of 77 runaways, the
 * host's work for them included (`npm run bench:fuel`, in-thread and in workerd), so at this rate the clock fires
 * first wherever it moves, and where clocks stand still during synchronous work (deployed Workers) fuel stops the run
 * within 1.2-5.1x the cap.
 */
export const FUEL_PER_MS = 1_000_000;

/**
 * The safety cap of runs that must stop within `timeoutMs` even where a timer cannot fire (synchronous guest code on
 * the caller's thread) or clocks stand still (deployed Workers): as many milliseconds of CPU, and fuel at
 * {@link FUEL_PER_MS}, each at most `most`'s.
 */
export function safetyCapWithin(timeoutMs: number, most: Partial<SafetyCap> = {}): SafetyCap {
  return {
    cpuTimeMs: Math.min(timeoutMs, most.cpuTimeMs ?? Number.POSITIVE_INFINITY),
    fuel: Math.min(timeoutMs * FUEL_PER_MS, most.fuel ?? Number.POSITIVE_INFINITY),
  };
}

/** The safety cap of one run of a sandbox capped at `cap`: within the run's `timeoutMs` when it sets one. */
export function runSafetyCap(cap: SafetyCap, timeoutMs: number | undefined): SafetyCap {
  return timeoutMs === undefined ? cap : safetyCapWithin(timeoutMs, cap);
}

const CAP_STOP = "Execution stopped by the safety cap after ";
const CPU_SPENT = " ms of CPU time";
const FUEL_SPENT = " units of fuel";

/** The stop of a run past its safety cap, after `spent`. */
function capStop(spent: string): Stop {
  return { kind: "terminated", error: { name: "TerminatedError", message: `${CAP_STOP}${spent}` } };
}

/** The stop of a run past its safety cap's `fuel`. */
function fuelStop(fuel: number): Stop {
  return capStop(`${fuel}${FUEL_SPENT}`);
}

/**
 * The part of its safety cap that stopped a run, with its value, read from the run's `TerminatedError` (as the
 * result carries it across threads); `undefined` when something else stopped it.
 */
export function safetyCapStopOf(
  error: CodeExecutionError | undefined,
): { limit: keyof SafetyCap; value: number } | undefined {
  const message = error?.name === "TerminatedError" ? error.message : "";
  if (!message.startsWith(CAP_STOP)) return undefined;
  const spent = message.slice(CAP_STOP.length);
  for (const [limit, unit] of [
    ["cpuTimeMs", CPU_SPENT],
    ["fuel", FUEL_SPENT],
  ] as const) {
    const value = Number(spent.slice(0, -unit.length));
    if (spent.endsWith(unit) && spent.length > unit.length && Number.isFinite(value)) return { limit, value };
  }
  return undefined;
}

/** The setting a host gives each part of its sandboxes' safety cap (`RUN_CPU_MS`, `RUN_FUEL`), which its stops name. */
export interface SafetyCapNames {
  cpuTimeMs: string;
  fuel: string;
}

/**
 * The limit that stopped a run by its safety cap (`stop`, read by {@link safetyCapStopOf}) and its value, in words:
 * the run's `timeoutMs` when the cap was lowered to it ({@link safetyCapWithin}), else the host's cap per run by the
 * name of its setting in `names`: `its timeoutMs (300 ms)`, `its fuel cap (300000000 units: its timeoutMs of 300 ms
 * at 1000000 units per ms)`, `the host's CPU cap per run (RUN_CPU_MS = 2000 ms)`, `the host's fuel cap per run
 * (RUN_FUEL = 2500000000 units)`. The one wording of these stops, wherever a host words one.
 */
export function safetyCapStopWords(
  stop: { limit: keyof SafetyCap; value: number },
  timeoutMs: number | undefined,
  names: SafetyCapNames,
): string {
  const { limit, value } = stop;
  const lowered = timeoutMs !== undefined && value >= (limit === "fuel" ? timeoutMs * FUEL_PER_MS : timeoutMs);
  if (limit === "cpuTimeMs") {
    return lowered
      ? `its timeoutMs (${timeoutMs} ms)`
      : `the host's CPU cap per run (${names.cpuTimeMs} = ${value} ms)`;
  }
  return lowered
    ? `its fuel cap (${value} units: its timeoutMs of ${timeoutMs} ms at ${FUEL_PER_MS} units per ms)`
    : `the host's fuel cap per run (${names.fuel} = ${value} units)`;
}

/** The hard stop, thrown by the meter through the engine's frames: the instance is dropped after it. */
class FuelHardStop extends Error {}

const CALLER_TERMINATED: CodeExecutionError = Object.freeze(terminatedError());

export class Limits {
  readonly #settings: LimitSettings;
  #stop: Stop | undefined;
  #faulted = false;
  #fault: unknown;
  /** Fuel spent up to the last grant, and the grant (the counter's value when it was made). */
  #fuel = 0;
  #granted = 0;
  #meter: Meter | undefined;
  /** Whether the run spends its stop's grace. */
  #stopping = false;
  #cpuMs = 0;
  #sliceStart = 0;
  #depth = 0;
  #retained = 0;
  /** Fuel paid beyond the cap's (see {@link payBeyondCap}): the cap rises by it. */
  #beyondCap = 0;

  constructor(settings: LimitSettings) {
    this.#settings = settings;
  }

  /** Why the host stopped the run, if it did. */
  get stop(): Stop | undefined {
    return this.#stop;
  }

  /** The first host exception out of a VM call, if any. */
  get hostFault(): unknown {
    return this.#fault;
  }

  get faulted(): boolean {
    return this.#faulted;
  }

  /** The caller's terminate (the handle has settled already). */
  terminate(error: CodeExecutionError): void {
    this.#stop ??= { kind: "terminated", error };
  }

  /** Records a host exception; the first one is the run's. */
  fault(error: unknown): void {
    if (this.#faulted) return;
    this.#faulted = true;
    this.#fault = error;
  }

  /** Whether the run must stop at this yield point (an outside stop is taken as the caller's terminate). */
  stopped(): boolean {
    if (this.#stop === undefined && this.#settings.interrupted())
      this.#stop = { kind: "terminated", error: CALLER_TERMINATED };
    return this.#stop !== undefined || this.#settings.settled();
  }

  /** Throws {@link Stopped} when the run must stop. */
  check(): void {
    if (this.stopped()) throw new Stopped();
  }

  /**
   * Enters the VM: accounts guest time for the safety cap and turns a host exception into a fault of the run, which
   * is thrown again on the way out (also when it happened in a nested host call and the VM returned normally).
   */
  enter<T>(call: () => T): T {
    if (this.#depth++ === 0) this.#sliceStart = this.#settings.clock();
    let result: T | undefined;
    try {
      result = call();
    } catch (fault) {
      this.fault(fault);
    } finally {
      if (--this.#depth === 0) this.#cpuMs += this.#settings.clock() - this.#sliceStart;
    }
    if (this.#faulted) throw this.#fault;
    return result as T;
  }

  /** The engine's work so far, in units of fuel. */
  get fuelUsed(): number {
    return this.#meter === undefined ? this.#fuel : this.#fuel + this.#granted - (this.#meter.counter.value as number);
  }

  /** The run's memory limit: its heap's, and the most bytes the host holds for its work at once. */
  get memoryLimitBytes(): number {
    return this.#settings.memoryLimitBytes;
  }

  /** Fuel the run has left under its safety cap. */
  get fuelLeft(): number {
    return this.#fuelCap - this.fuelUsed;
  }

  /** The fuel the run may spend: its cap's, and what it paid beyond it. */
  get #fuelCap(): number {
    return this.#settings.safetyCap.fuel + this.#beyondCap;
  }

  /** Counts work the host metered for the run outside the engine (transpiling its TypeScript, see host-fuel.ts). */
  spend(units: number): void {
    this.#fuel += units;
  }

  /**
   * Charges host work about to be done for the guest (see host-fuel.ts); `false` when the run must stop instead (its
   * stop recorded, the work not to be done).
   */
  pay(units: number): boolean {
    if (!this.affords(units)) return false;
    this.#fuel += units;
    return !this.#mustStop();
  }

  /**
   * As {@link pay}, for work the cap does not count: the run's `fuelUsed` includes it, its cap rises by it, up to
   * `most`. An attempt on Node's caller's thread pays its host calls so (node/threads/in-thread-first.ts): its slice
   * bounds the engine's own work, the calls are the caller's thread's work wherever the run is, and `most` is the
   * run's own cap.
   */
  payBeyondCap(units: number, most: number): boolean {
    const raise = Math.min(units, Math.max(0, most - this.#fuelCap));
    this.#beyondCap += raise;
    if (this.pay(units)) return true;
    this.#beyondCap -= raise;
    return false;
  }

  /**
   * Whether the run's fuel can pay for `units` of work; if not, the run stops on its fuel without being charged
   * them (the work is not done: a wait past what it has left, a host call past the cap), so `fuelUsed` stays what it did.
   */
  affords(units: number): boolean {
    if (units <= this.fuelLeft) return true;
    this.#stop ??= fuelStop(this.#settings.safetyCap.fuel);
    return false;
  }

  /** Makes `meter` spend for this run until {@link release}. */
  meter(meter: Meter): void {
    this.#meter = meter;
    meter.onEmpty = this.#refuel;
    this.#granted = Math.min(FUEL_QUANTUM, this.#fuelCap);
    meter.counter.value = this.#granted;
  }

  /** Gives the meter back (see `Meter.idle`), with the fuel the run spent recorded. */
  release(): void {
    const meter = this.#meter;
    if (meter === undefined) return;
    this.#fuel = this.fuelUsed;
    this.#meter = undefined;
    meter.idle();
  }

  /** The interrupt handler: polled about every 10,000 guest calls or loop iterations. */
  readonly poll = (): boolean => {
    if (this.#meter === undefined) this.#fuel += UNMETERED_POLL_FUEL;
    return this.#mustStop();
  };

  /** Throws {@link Stopped} when the run must stop, its safety cap included: after work the host did for it. */
  checkSpent(): void {
    if (this.#mustStop()) throw new Stopped();
  }

  /**
   * Native work the guest estimated (see "Native work" in guest/core.ts), then one poll. A metered engine counts
   * that work itself; elsewhere it is fuel at the poll's rate.
   */
  charge(polls: number): boolean {
    if (this.#meter === undefined) this.#fuel += Math.max(0, polls - 1) * UNMETERED_POLL_FUEL;
    return this.poll();
  }

  /** Whether the run must stop: stopped, faulted or past its safety cap (recorded as its stop). */
  #mustStop(): boolean {
    if (this.stopped() || this.#faulted) return true;
    const { fuel, cpuTimeMs } = this.#settings.safetyCap;
    const cap = this.#fuelCap;
    // The meter also runs out in VM calls outside a slice (reading a promise's state, making a value): no guest time.
    const slice = this.#depth > 0 ? this.#settings.clock() - this.#sliceStart : 0;
    const cpuMs = this.#cpuMs + slice;
    const outOfFuel = this.fuelUsed > cap;
    if (outOfFuel || cpuMs > cpuTimeMs) {
      this.#stop = outOfFuel ? fuelStop(fuel) : capStop(`${cpuTimeMs}${CPU_SPENT}`);
      return true;
    }
    return false;
  }

  /**
   * The meter ran out. A run that must stop first gets a grace to end at the engine's next interrupt poll; once
   * that is spent the hard stop is thrown through the engine, and again at every later check (the counter stays
   * below zero), so a bridged call that turns it into a guest exception cannot keep the run going.
   */
  readonly #refuel = (): void => {
    const fuel = this.#fuelCap;
    if (this.#stopping) {
      this.#grant(-1);
      this.fault(new FuelHardStop("The run did not end within its stop's grace"));
      throw this.#fault;
    }
    if (this.#mustStop()) {
      this.#stopping = true;
      this.#grant(STOP_GRACE_FUEL);
    } else this.#grant(Math.min(FUEL_QUANTUM, fuel - this.fuelUsed));
  };

  /** Sets the counter to `units`, what was spent of the last grant added to `#fuel`. */
  #grant(units: number): void {
    const { counter } = this.#meter as Meter;
    this.#fuel += this.#granted - (counter.value as number);
    this.#granted = units;
    counter.value = units;
  }

  /**
   * Counts a log entry, report or failed import the host is about to keep; past `memoryLimitBytes` the run ends with `memory`
   * (the entry is dropped, and so is every later one: the guest's call throws until the interrupt stops it).
   */
  retain(bytes: number): boolean {
    const { memoryLimitBytes } = this.#settings;
    this.#retained += bytes + RETAINED_ENTRY_BYTES;
    if (this.#retained <= memoryLimitBytes) return true;
    this.#stop ??= {
      kind: "memory",
      error: {
        name: "MemoryError",
        message: `The run's logs, reports and failed imports exceeded memoryLimitBytes (${memoryLimitBytes}): the host keeps them for the run`,
      },
    };
    return false;
  }
}
