/**
 * Sessions: one realm kept between calls (docs/sessions.md). A session holds a booted instance of its own that is
 * never restored: each cell is a run on it (core/run.ts's `startCell`) evaluating a script in the session's realm
 * (core/cell-source.ts). Cells, snapshots, forks and the close take turns in one queue.
 *
 * Before a cell runs, the session has a copy of its state at rest, so a cell that leaves the engine unfit (a host
 * fault, an abort) costs only its own effects: the session goes on, on a new instance, from the state before it. A
 * fork shares that copy and takes an instance of its own when it first needs one. A snapshot is the memory, checked
 * and compressed (core/snapshot.ts). Host functions never
 * enter the memory (the guest holds their numbers): a restored session numbers its options' functions again and
 * checks that each number names the function at the same path as when the snapshot was taken.
 * @module
 */
import type { FunctionTable, HostFunction } from "../values/to-guest.js";
import { linearMemoryBytes, memoryHolding } from "./engine.js";
import { ForwardingRun } from "./forwarding-run.js";
import type { BootedInstance } from "./instance.js";
import type { ModuleMapping } from "./linker.js";
import type { Ending } from "./outcome.js";
import { type PreparedRun, prepareRun } from "./request.js";
import type { RunChannel, StartedRun } from "./run.js";
import { startCell } from "./run.js";
import { type SandboxContext, sandboxContext, startRun } from "./sandbox.js";
import {
  type DecodedSnapshot,
  decodeSnapshot,
  encodeSnapshot,
  SnapshotError,
  type SnapshotHeader,
} from "./snapshot.js";
import type { CellOptions, CodeExecution, CodeExecutionError, Session, SessionOptions } from "./types.js";
import { RUNCODE_VERSION } from "./version.js";

/** Cells, snapshots and forks a session queues behind the one under way; `run` past it throws "busy". */
export const MAX_QUEUED_CELLS = 16;

/** What `SessionError.code` tells apart. */
export type SessionErrorCode = "closed" | "busy" | "invalid_snapshot" | "snapshot_mismatch";

/** A session refused a call: closed, too many cells queued, or a snapshot it cannot take. */
export class SessionError extends Error {
  readonly code: SessionErrorCode;

  constructor(code: SessionErrorCode, message: string) {
    super(message);
    this.name = "SessionError";
    this.code = code;
  }
}

const CELL_OPTIONS = new Set(["language", "timeoutMs", "signal", "filename", "report", "onLog"]);

/** A cell's end when it was stopped before its turn came. */
const CLOSED: CodeExecutionError = { name: "TerminatedError", message: "Execution terminated: the session was closed" };

/** What a session and its forks share: the sandbox's settings and the options every cell of theirs takes. */
interface SessionShape {
  context: SandboxContext;
  memoryLimitBytes: number;
  tenant: string | undefined;
  modules: Record<string, string>;
  /** Bare specifier -> the names of its exports (the values are in the session's memory). */
  imports: Record<string, string[]>;
  /** The path in the options of each host function the options numbered (see {@link functionPaths}). */
  functions: string[];
}

/**
 * A copy of a session's state at rest (between cells): its memory below the C stack, and from the stack's top to the
 * span (the stack holds nothing between cells). Never changed once made: a fork may share it.
 */
interface RestState {
  /**
   * The memory the state asks of an instance that adopts it: what holds its span, never the length of the memory it
   * was taken from, which an earlier run on a kept instance may have grown (see `BootedInstance.release`).
   */
  byteLength: number;
  span: number;
  stackTop: number;
  below: Uint8Array;
  above: Uint8Array;
  /** Whether a fork holds it too (then its buffers are not reused). */
  shared: boolean;
}

/** A copy of `booted`'s state, into `reuse`'s buffers where they are not shared and large enough. */
function restStateOf(booted: BootedInstance, reuse: RestState | undefined): RestState {
  const { buffer } = booted.instance.memory;
  const span = booted.span() as number;
  const { low, top } = booted.stack;
  const memory = new Uint8Array(buffer);
  const mine = reuse !== undefined && !reuse.shared;
  const below = mine && reuse.below.length === low ? reuse.below : new Uint8Array(low);
  const size = span - top;
  // Room to grow, so that a session whose memory grows a little does not make a new buffer every cell.
  const room =
    mine && reuse.above.buffer.byteLength >= size ? reuse.above.buffer : new ArrayBuffer(Math.ceil(size * 1.25));
  const above = new Uint8Array(room, 0, size);
  below.set(memory.subarray(0, low));
  above.set(memory.subarray(top, span));
  return { byteLength: memoryHolding(span), span, stackTop: top, below, above, shared: false };
}

/** Creates a session; see {@link Session}. Bad options throw a `TypeError`, as `runCode`'s do. */
export async function createSession(settings: SessionOptions = {}): Promise<Session> {
  const { setup, shape } = sessionParts(settings, undefined);
  const booted = await takeInstance(shape);
  const session = new LiveSession(shape, booted, setup.functions, new Map(), 0);
  await session.setUp(setup);
  return session;
}

/**
 * A session in the state `bytes` hold (`Session.snapshot`), with `settings` as `createSession` takes them: the same
 * Web APIs, fetch setting and boot modules, and host functions at the same paths (their values come from the
 * snapshot), and the snapshot's `memoryLimitBytes` when they give none, up to the sandbox's default. Refuses bytes of
 * another version, cut short or changed (`SessionError` "invalid_snapshot"), and settings that do not match
 * ("snapshot_mismatch"), a limit past the default they do not give included.
 */
export async function restoreSession(bytes: Uint8Array, settings: SessionOptions = {}): Promise<Session> {
  if (!(bytes instanceof Uint8Array)) throw new TypeError("restoreSession: bytes must be a Uint8Array");
  const context = sandboxContext(withoutRunOptions(settings));
  const bound = linearMemoryBytes(settings.memoryLimitBytes ?? context.defaultMemoryLimitBytes);
  let decoded: DecodedSnapshot;
  try {
    decoded = await decodeSnapshot(bytes, { runcode: RUNCODE_VERSION, maxMemoryBytes: bound });
  } catch (error) {
    if (error instanceof SnapshotError) throw new SessionError("invalid_snapshot", `restoreSession: ${error.message}`);
    throw error;
  }
  const { header } = decoded;
  // The bytes may be a stranger's: their own limit is kept only within what the caller's settings allow unasked.
  if (settings.memoryLimitBytes === undefined && header.memoryLimitBytes > context.defaultMemoryLimitBytes)
    mismatch(
      `the snapshot asks memoryLimitBytes ${header.memoryLimitBytes}, more than this sandbox's default ` +
        `(${context.defaultMemoryLimitBytes}): give memoryLimitBytes to restore it with that much`,
    );
  const { setup, shape } = sessionParts(settings, header.memoryLimitBytes);
  if (header.memoryBytes > linearMemoryBytes(shape.memoryLimitBytes))
    mismatch(
      `the session spans ${header.memoryBytes} bytes, more than memoryLimitBytes ${shape.memoryLimitBytes} lets it`,
    );
  if (header.boot !== context.boot.key)
    mismatch("the snapshot was taken with other webApis, fetch, intl, packages or bootModules settings");
  if (header.functions.join("\n") !== shape.functions.join("\n")) {
    const taken = header.functions.join(", ") || "none";
    mismatch(
      `the snapshot's host functions are at ${taken}; these options have ${shape.functions.join(", ") || "none"}`,
    );
  }
  const booted = await takeInstance(shape);
  if (booted.engineKey !== header.engine) {
    shape.context.pool.give(booted, false);
    mismatch("the snapshot was taken on another build of the engine");
  }
  booted.adopt(header.memoryBytes, header.span, (memory) => decoded.writeInto(memory, noBase));
  // The allocator's break is a word of the memory written: bytes that put it outside the span they hold would leave
  // a session whose every later step fails on the host.
  if (booted.span() !== header.span) {
    shape.context.pool.give(booted, false);
    throw new SessionError(
      "invalid_snapshot",
      `restoreSession: Invalid snapshot: the allocator's break in its memory is not within its span ${header.span}`,
    );
  }
  return new LiveSession(shape, booted, setup.functions, new Map(), header.cells);
}

function mismatch(reason: string): never {
  throw new SessionError("snapshot_mismatch", `restoreSession: ${reason}`);
}

/** The snapshot's base: pages the snapshot does not hold are zero. */
const noBase = () => undefined;

/** A session's settings without the run options it gives once. */
function withoutRunOptions(settings: SessionOptions) {
  const { imports: _i, modules: _m, globals: _g, memoryLimitBytes: _l, tenant: _t, ...sandbox } = settings;
  return sandbox;
}

/**
 * The sandbox's context, the setup cell (the options' values encoded, their functions numbered) and the shape of a
 * session of `settings`; `memoryLimitBytes`: the limit a restored snapshot had, when the settings set none.
 */
function sessionParts(settings: SessionOptions, memoryLimitBytes: number | undefined) {
  if (typeof settings !== "object" || settings === null)
    throw new TypeError("createSession: options must be an object");
  const context = sandboxContext(withoutRunOptions(settings));
  const { imports, modules, globals, tenant } = settings;
  const limit = settings.memoryLimitBytes ?? memoryLimitBytes;
  const options = definedOptions({ imports, modules, globals, tenant, memoryLimitBytes: limit });
  const setup = prepareRun(
    "",
    { ...options, language: "javascript", filename: "<session>" },
    context.defaultMemoryLimitBytes,
  );
  const shape: SessionShape = {
    context,
    memoryLimitBytes: setup.options.memoryLimitBytes,
    tenant,
    modules: setup.options.modules,
    imports: setup.options.imports,
    functions: functionPaths(setup.functions, { globals, imports }),
  };
  return { setup, shape };
}

/**
 * Where each numbered function is in the options, as `globals.fetchUser` or `imports.tools.search` (keys that are
 * not identifiers quoted), by a walk of their plain objects and arrays; a function found nowhere is `#<number>`.
 */
function functionPaths(functions: FunctionTable, roots: Record<string, unknown>): string[] {
  const found = new Map<HostFunction, string>();
  const seen = new Set<object>();
  const queue: [unknown, string][] = Object.entries(roots).map(([key, value]) => [value, key]);
  for (let i = 0; i < queue.length; i++) {
    const [value, path] = queue[i] as [unknown, string];
    if (typeof value === "function" && !found.has(value as HostFunction)) found.set(value as HostFunction, path);
    if (typeof value !== "object" || value === null || seen.has(value)) continue;
    seen.add(value);
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null && !Array.isArray(value)) continue;
    for (const key of Object.keys(value)) {
      const step = /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
      queue.push([(value as Record<string, unknown>)[key], path + step]);
    }
  }
  return Array.from({ length: functions.size }, (_, id) => found.get(functions.get(id) as HostFunction) ?? `#${id}`);
}

/**
 * Before the pool boots the spare instance of {@link takeInstance}: a boot holds the thread (~20 ms, more with the Web
 * APIs), so it waits for a pause such as a caller's between two calls, rather than delaying the session's next cell.
 */
const SPARE_DELAY_MS = 200;

/**
 * An instance for a session of `shape`: its own until the session closes. When it leaves the pool with none like it
 * idle, another is booted after a pause, so that the next fork, restore or session finds one (a boot is most of what
 * they would cost).
 */
async function takeInstance(shape: SessionShape): Promise<BootedInstance> {
  const { context, memoryLimitBytes } = shape;
  const wasm = await context.wasm();
  const { pool, boot } = context;
  const booted = await pool.take(wasm, memoryLimitBytes, true, boot);
  if (booted.span() === undefined) {
    pool.give(booted, false);
    throw new TypeError("This engine build cannot keep sessions: its allocator's break was not found");
  }
  if (!pool.hasIdle(wasm, memoryLimitBytes, boot)) {
    const spare = setTimeout(() => {
      if (!pool.hasIdle(wasm, memoryLimitBytes, boot)) pool.prepare(wasm, memoryLimitBytes, boot).catch(() => {});
    }, SPARE_DELAY_MS);
    // A spare is worth nothing to a process with nothing else to do.
    (spare as { unref?: () => void }).unref?.();
  }
  return booted;
}

class LiveSession implements Session {
  readonly #shape: SessionShape;
  readonly #functions: FunctionTable;
  readonly #mappings: Map<string, ModuleMapping>;
  /**
   * The session's instance; `undefined` until a step needs one (a fork's first), and after a cell left it unfit,
   * until the next step takes another given {@link #rest}.
   */
  #booted: BootedInstance | undefined;
  /** The state at rest, when a copy of it was made since the last cell; its buffers are kept for the next. */
  #rest: RestState | undefined;
  /** Whether {@link #rest} is the state now. */
  #restValid: boolean;
  #cells: number;
  #closed = false;
  /** The last step queued: steps run one at a time, in order. */
  #tail: Promise<unknown> = Promise.resolve();
  #queued = 0;
  /** The cell under way. */
  #current: QueuedCell | undefined;

  constructor(
    shape: SessionShape,
    state: BootedInstance | RestState,
    functions: FunctionTable,
    mappings: Map<string, ModuleMapping>,
    cells: number,
  ) {
    this.#shape = shape;
    if ("instance" in state) {
      this.#booted = state;
      this.#restValid = false;
    } else {
      this.#rest = state;
      this.#restValid = true;
    }
    this.#functions = functions;
    this.#mappings = mappings;
    this.#cells = cells;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get cells(): number {
    return this.#cells;
  }

  get memoryBytes(): number {
    return this.#booted?.span() ?? this.#rest?.span ?? 0;
  }

  /** Binds the options' globals and imports in the new realm; throws, the session closed, when that fails. */
  async setUp(setup: PreparedRun): Promise<void> {
    const result = await this.#start(setup, true);
    if (result.status === "success") return;
    this.close();
    throw new Error(`createSession: the session could not be set up: ${result.error?.message}`);
  }

  run(cell: string, options: CellOptions = {}): CodeExecution {
    this.#open("run");
    if (typeof options !== "object" || options === null) throw new TypeError("Session.run: options must be an object");
    for (const key of Object.keys(options)) {
      if (!CELL_OPTIONS.has(key)) throw new TypeError(`Session.run: unknown option '${key}'`);
    }
    const { signal, filename = "<cell>", ...rest } = options;
    if (signal !== undefined && !isAbortSignal(signal))
      throw new TypeError("Session.run: signal must be an AbortSignal");
    if (this.#queued >= MAX_QUEUED_CELLS) {
      throw new SessionError("busy", `${MAX_QUEUED_CELLS} steps are queued on this session: wait for one to end`);
    }
    const { memoryLimitBytes, tenant } = this.#shape;
    const prepared = prepareRun(
      cell,
      { ...rest, filename, memoryLimitBytes, ...definedOptions({ tenant }) },
      memoryLimitBytes,
    );
    const execution = this.#start(prepared, false);
    if (signal !== undefined) {
      const abort = () => execution.terminate(abortReason(signal));
      if (signal.aborted) abort();
      else {
        signal.addEventListener("abort", abort, { once: true });
        void execution.then(() => signal.removeEventListener("abort", abort));
      }
    }
    return execution;
  }

  snapshot(): Promise<Uint8Array> {
    this.#open("snapshot");
    return this.#queue(async () => {
      const booted = await this.#instance();
      const span = booted.span() as number;
      const memory = new Uint8Array(booted.instance.memory.buffer, 0, span);
      // The stack holds nothing between cells: zeroed, its pages cost nothing.
      const { low, top } = booted.stack;
      memory.fill(0, low, top);
      return encodeSnapshot(this.#header(booted, span), memory, noBase);
    });
  }

  fork(): Promise<Session> {
    this.#open("fork");
    return this.#queue(async () => {
      const rest = await this.#restState();
      rest.shared = true;
      return new LiveSession(this.#shape, rest, this.#functions.copy(), new Map(this.#mappings), this.#cells);
    });
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#current?.stop(CLOSED);
    void this.#queue(async () => {
      if (this.#booted !== undefined) this.#shape.context.pool.give(this.#booted, false);
      this.#booted = undefined;
      this.#rest = undefined;
    });
  }

  #open(what: string): void {
    if (this.#closed) throw new SessionError("closed", `Session.${what}: the session is closed`);
  }

  /** Queues `step` after every step before it; the queue goes on whatever `step` does. */
  #queue<T>(step: () => Promise<T>): Promise<T> {
    this.#queued++;
    const done = this.#tail.then(step);
    this.#tail = done.then(
      () => this.#queued--,
      () => this.#queued--,
    );
    return done;
  }

  /** Starts `request` as a cell in its turn: its handle at once, as `runCode`'s. */
  #start(request: PreparedRun, setup: boolean): CodeExecution {
    const { context } = this.#shape;
    const cellRequest: PreparedRun = {
      ...request,
      options: { ...request.options, modules: this.#shape.modules, imports: this.#shape.imports },
      functions: this.#functions,
    };
    return startRun(context, (_, cell, channel) => this.#enqueue(cell, channel, setup), cellRequest, context.clock());
  }

  #enqueue(request: PreparedRun, channel: RunChannel, setup: boolean): StartedRun {
    return new QueuedCell((cell) =>
      this.#queue(async () => {
        if (cell.stopped !== undefined) return { status: "terminated", error: cell.stopped };
        if (this.#closed && !setup) return { status: "terminated", error: CLOSED };
        await this.#restState();
        const booted = await this.#instance();
        booted.recordHandles();
        this.#current = cell;
        const target = {
          booted,
          mappings: this.#mappings,
          setup,
          done: (sound: boolean) => this.#cellDone(booted, sound, setup),
        };
        const ending = await cell.start(startCell(this.#shape.context, request, channel, target));
        this.#current = undefined;
        return ending;
      }),
    );
  }

  /** A cell is over: the instance is tidied for the next, or dropped for the state before the cell. */
  #cellDone(booted: BootedInstance, sound: boolean, setup: boolean): void {
    if (!setup) this.#cells++;
    booted.release(sound);
    if (sound) {
      this.#restValid = false;
      const { ctx, timers } = booted;
      // The timers the cell left end with it.
      if (timers !== undefined) {
        const cleared = ctx.callFunction(timers.clear, ctx.undefined, []);
        (cleared.error ?? cleared.value).dispose();
      }
      booted.sweepHandles();
      return;
    }
    this.#shape.context.pool.give(booted, false);
    this.#booted = undefined;
  }

  /** A copy of the state at rest, made now unless the state has not changed since the last. */
  async #restState(): Promise<RestState> {
    if (this.#restValid) return this.#rest as RestState;
    this.#rest = restStateOf(await this.#instance(), this.#rest);
    this.#restValid = true;
    return this.#rest;
  }

  /** The session's instance: a new one given the state at rest when it has none (a fork's first step, a fault). */
  async #instance(): Promise<BootedInstance> {
    if (this.#booted !== undefined) return this.#booted;
    const { byteLength, span, stackTop, below, above } = this.#rest as RestState;
    const booted = await takeInstance(this.#shape);
    booted.adopt(byteLength, span, (memory) => {
      memory.set(below);
      memory.set(above, stackTop);
    });
    this.#booted = booted;
    return booted;
  }

  #header(booted: BootedInstance, span: number): SnapshotHeader {
    const { context, memoryLimitBytes, functions } = this.#shape;
    return {
      runcode: RUNCODE_VERSION,
      engine: booted.engineKey,
      boot: context.boot.key,
      memoryLimitBytes,
      functions,
      cells: this.#cells,
      memoryBytes: memoryHolding(span),
      span,
    };
  }
}

/** A cell waiting for its turn, then under way: what its handle reads (see `StartedRun`). */
class QueuedCell extends ForwardingRun implements StartedRun {
  readonly ended: Promise<Ending>;
  /** Why the cell was stopped before its turn. */
  stopped: CodeExecutionError | undefined;

  constructor(body: (cell: QueuedCell) => Promise<Ending>) {
    super();
    this.ended = body(this);
  }

  /** The cell's turn came: it runs as `run`. */
  start(run: StartedRun): Promise<Ending> {
    this.current = run;
    if (this.stopped !== undefined) run.stop(this.stopped);
    return run.ended;
  }

  stop(error: CodeExecutionError): void {
    this.stopped ??= error;
    this.current?.stop(error);
  }
}

/** `options` without the keys it leaves `undefined` (the options of a run take no `undefined`). */
function definedOptions<T extends Record<string, unknown>>(options: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as never;
}

function isAbortSignal(value: unknown): value is AbortSignal {
  return typeof value === "object" && value !== null && "aborted" in value && "addEventListener" in value;
}

function abortReason(signal: AbortSignal): string {
  const { reason } = signal as { reason?: unknown };
  return reason instanceof Error ? reason.message : reason === undefined ? "The cell's signal aborted" : String(reason);
}
