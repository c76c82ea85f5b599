/**
 * The core's ports: what a sandbox needs of the parts a host may give it (`SandboxOptions.transpiler`,
 * `SandboxOptions.pool`), as interfaces the contract names and the core's implementations (transpile.ts,
 * instance-pool.ts) implement. This module imports no implementation, so the contract (types.ts) imports none.
 * @module
 */
import type { TraceMap } from "@jridgewell/trace-mapping";

/** A module with its types erased. */
export interface Transpiled {
  code: string;
  /** Present when positions moved (enums, namespaces...). */
  map?: TraceMap;
}

/** A syntax error at a 1-based position of the original source. */
export interface TranspileFailure {
  message: string;
  line: number;
  column: number;
}

/** The run's side of a transpile: the fuel it has left, what the transpile spent, and whether it must stop. */
export interface FuelAccount {
  readonly fuelLeft: number;
  spend(units: number): void;
  stopped(): boolean;
}

/** Erases TypeScript (the default `language`) for a sandbox's runs; the core's own is `Transpiler` (SWC). */
export interface TranspilerPort {
  /** Readies {@link transpile}; called before a run's first TypeScript module. */
  load(): Promise<void>;
  /** Erases types from one module, the work charged to `account`. */
  transpile(source: string, account: FuelAccount): Transpiled | TranspileFailure;
}

/**
 * Booted instances that the sandboxes given the same one share, with their memory bound. The core's `InstancePool`
 * is the one a sandbox takes (it lends the core's own instances); this is what a host does with it.
 */
export interface InstancePoolPort {
  /** Bounds the linear memory of lent and idle instances together (idle ones give way to lent ones). */
  limitMemory(bytes: number): void;
}
