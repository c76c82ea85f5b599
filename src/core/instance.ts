/**
 * A booted instance: a wasm instance with its QuickJS runtime and context and the whole prelude evaluated (the core
 * and the marshaling half), lent to one run at a time. Booting records the linear memory; after a run the image is
 * written back, so the next run starts from exactly the booted state without a new instance or the prelude again.
 *
 * Lifetimes: handles made at boot live as long as the instance (they point into the image); handles a run makes
 * point into memory the restore rewrites, so they die with the run, are never disposed one by one and are never
 * used again (the run that made them checks that it still holds the instance).
 * @module
 */
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, VmCallResult } from "quickjs-emscripten-core";
import type { CoreInternals } from "../guest/core.js";
import type { MarshalInternals } from "../guest/marshal.js";
import {
  guestCoreSource,
  guestIntlSource,
  guestMarshalSource,
  guestSlowPathsSource,
} from "../guest/sources.generated.js";
import { OP_CHARGE } from "../values/tape.js";
import { bootedMaximum, type Instance, memoryHolding, newInstance, PROBE_SECTION, STACK_MARK } from "./engine.js";
import { BOOT_PREFIX, INTERNALS_MODULE, INTERNALS_MODULE_SOURCE } from "./linker.js";
import { PlainData, type PlainFacts, plainFactsOf } from "./plain-data.js";
import { ValueBits } from "./value-bits.js";
import { WEB_API_SOURCES } from "./web-apis.js";

/** QuickJS's own stack limit; deeper guest recursion is a clean `RangeError` (see docs/limits). */
const MAX_STACK_BYTES = 512 * 1024;
/** Granularity of the booted image: blocks that were all zero at boot are kept as nothing and zeroed on restore. */
const BLOCK = 64 * 1024;
/**
 * The engine's C stack, below where the stack pointer starts (the build's STACK_SIZE; test/core/memory-layout.test.ts
 * reads both from the wasm). Between two VM calls it holds nothing live.
 */
export const C_STACK_BYTES = 5 * 1024 * 1024;
/** The allocation that reveals the allocator's break (see {@link memoryLayout}). */
const PROBE_BYTES = 8 * 1024 * 1024;
/** Static data, where the break lives, is within the first pages; the probe compares this much. */
const PROBE_SCAN_BYTES = 1024 * 1024;
/**
 * The most linear memory an instance whose run grew it is kept with: restoring rewrites the heap up to the break (a
 * 21 MB heap in ~2 ms, where a boot takes ~15 ms and the grown run paid for its growth and fresh pages again), and an
 * idle instance holds its memory.
 */
export const MAX_KEPT_MEMORY_BYTES = 64 * 1024 * 1024;
/**
 * Room an instance is kept with below its memory's maximum: a run's outcome reads a failure with a page or less of
 * room as out of memory (see core/outcome.ts), so an instance left that full would misreport the next run's faults.
 */
const KEPT_ROOM_BYTES = 2 * 65_536;
/**
 * How far past the allocator's break Emscripten's resize may grow the memory: it grows to the break asked for or by a
 * fifth of the memory's size, whichever is more (`emscripten_resize_heap`), and only when the break passes the
 * memory's end, so a memory a run grew ends at most a fifth above the highest break the run reached.
 */
const RESIZE_OVERGROWTH = 1.2;

/** What the guest's host functions answer: a handle, a guest error, or `undefined`. */
export type Answer = QuickJSHandle | VmCallResult<QuickJSHandle> | undefined;

/** The guest's requests of the host (see OP_* in values/tape.ts). */
type HostCall = (
  op: QuickJSHandle,
  a: QuickJSHandle,
  tape: QuickJSHandle,
  side: QuickJSHandle,
  ok: QuickJSHandle,
) => Answer;

/** The guest's calls of the caller's functions: function number `id` with the guest's own arguments. */
type HostFunctionCall = (id: QuickJSHandle, args: QuickJSHandle[]) => Answer;

/** What the run holding the instance answers for it: the interrupt, the host functions and module loading. */
export interface Holder {
  poll(): boolean;
  /** The engine's wall clock (`Date.now()`, `new Date()`), in epoch milliseconds. */
  dateNow(): number;
  hostCall: HostCall;
  call: HostFunctionCall;
  normalize(base: string, specifier: string): string;
  load(name: string): string | { error: Error };
}

export type CoreHandles = Record<Exclude<keyof CoreInternals, "intrinsics">, QuickJSHandle> & {
  intrinsics: QuickJSHandle;
};
export type MarshalHandles = Record<"object" | keyof Omit<MarshalInternals, "clone">, QuickJSHandle>;

/** The host's handles on the guest's timers (see `nextTimer` and `fireTimer` in guest/web-kit.ts). */
export interface TimerHandles {
  next: QuickJSHandle;
  fire: QuickJSHandle;
  clear: QuickJSHandle;
}

/**
 * What an instance evaluates at boot besides the prelude: the Web APIs when the sandbox asks for them
 * (`SandboxOptions.webApis`), with `fetch` among them when it has a fetch setting, then `Intl` when it asks for it
 * (`SandboxOptions.intl`), then its boot modules (`SandboxOptions.bootModules`).
 */
export interface Boot {
  /** Tells instances booted alike from others. */
  key: string;
  webApis: boolean;
  fetch: boolean;
  intl: boolean;
  modules: Readonly<Record<string, string>>;
  /**
   * Whether `console` and `report` are bound in the image, as a run's lexical globals (see {@link bindingBoot}); never
   * for a session's instance, whose cells make them properties of the global object.
   */
  bindings?: true;
}

export const PLAIN_BOOT: Boot = Object.freeze({
  key: "",
  webApis: false,
  fetch: false,
  intl: false,
  modules: Object.freeze({}),
});

/** Property of the global object that hands staged values to the runtime's scripts, then is deleted. */
export const STAGE_KEY = "runcode:stage";

/**
 * The script that binds `names` as lexical globals from the values staged under {@link STAGE_KEY}, and deletes them
 * there: no user code can reach them.
 */
export function globalsScript(names: readonly string[]): string {
  const key = JSON.stringify(STAGE_KEY);
  return `const { ${names.join(", ")} } = globalThis[${key}].globals;\ndelete globalThis[${key}];`;
}

const bindingBoots = new WeakMap<Boot, Boot>();

/**
 * `boot` with `console` and `report` bound in the image, as every run binds them unless its globals name them: a
 * run restored from it compiles no script of its own to bind them, which was a fifth of a trivial run's fuel.
 */
export function bindingBoot(boot: Boot): Boot {
  let bound = bindingBoots.get(boot);
  if (bound === undefined) {
    bound = Object.freeze({ ...boot, key: `${boot.key}+globals`, bindings: true as const });
    bindingBoots.set(boot, bound);
  }
  return bound;
}

/** Boot modules already checked, by identity: a host that makes a sandbox per execution passes the same object. */
const bootModulesSeen = new WeakMap<object, Pick<Boot, "key" | "modules">>();

/** The {@link Boot} of a sandbox's settings (`fetch` only with `webApis`). */
export function bootOf(
  modules: Readonly<Record<string, string>> | undefined,
  webApis: boolean,
  fetch = false,
  intl = false,
): Boot {
  const checked = modules === undefined ? PLAIN_BOOT : checkedModules(modules);
  const web = webApis ? (fetch ? "web+fetch" : "web") : "";
  return checked.key === "" && !webApis && !intl
    ? PLAIN_BOOT
    : {
        key: `${web}${intl ? "+intl" : ""}${checked.key}`,
        webApis,
        fetch: webApis && fetch,
        intl,
        modules: checked.modules,
      };
}

function checkedModules(modules: Readonly<Record<string, string>>): Pick<Boot, "key" | "modules"> {
  const seen = Object.isFrozen(modules) ? bootModulesSeen.get(modules) : undefined;
  if (seen !== undefined) return seen;
  const entries = Object.entries(modules);
  for (const [name, source] of entries) {
    if (typeof source !== "string")
      throw new TypeError(`createSandbox: bootModules[${JSON.stringify(name)}] must be a string of module source`);
  }
  const checked = { key: JSON.stringify(entries), modules: Object.freeze(Object.fromEntries(entries)) };
  // Only a frozen setting stays as it was checked.
  if (Object.isFrozen(modules)) bootModulesSeen.set(modules, checked);
  return checked;
}

/**
 * Where a compiled module's memory can be written, measured once on a throwaway instance: below the allocator's break
 * (the heap, and static data under it) and below the C stack's top. A run's writes all land below the break: the
 * break is the allocator's high-water mark (it never comes down, even when what it bounds is freed) and the stack,
 * which grows down from its top, lies below where the heap starts.
 */
export interface MemoryLayout {
  /** Byte offset of the allocator's break in static data. */
  breakAt: number;
  /** The C stack pointer at rest: the stack is below it. */
  stackTop: number;
}

/** What a compiled module's engine is found to be: probed once on a throwaway instance, or as its build pinned it. */
interface ModuleProbe {
  /** `undefined`: not found or not as above, never restore. */
  layout: MemoryLayout | undefined;
  /** `undefined`: its objects are not as plain-data.ts reads them. */
  plain: PlainFacts | undefined;
  /** Read from the module's {@link PROBE_SECTION} rather than probed. */
  pinned: boolean;
}

const probes = new WeakMap<object, Promise<ModuleProbe>>();
const VARIANT_KEY = {};

function probeModule(wasm: WebAssembly.Module | undefined): Promise<ModuleProbe> {
  const key = wasm ?? VARIANT_KEY;
  let probe = probes.get(key);
  if (probe === undefined) {
    const pinned = wasm === undefined ? undefined : pinnedProbe(wasm);
    probe = pinned === undefined ? probed(wasm) : Promise.resolve(pinned);
    probes.set(key, probe);
  }
  return probe;
}

/** Probes `wasm` on a throwaway instance. */
async function probed(wasm: WebAssembly.Module | undefined): Promise<ModuleProbe> {
  const instance = await newInstance(wasm, 2 * PROBE_BYTES);
  // The layout first: it is measured on the instance's untouched allocator.
  return { layout: measureLayout(instance), plain: plainFactsOf(instance.quickjs, instance.memory), pinned: false };
}

/** What `wasm`'s {@link PROBE_SECTION} pins; `undefined` where it has none, or none of that shape. */
function pinnedProbe(wasm: WebAssembly.Module): ModuleProbe | undefined {
  const sections = WebAssembly.Module.customSections(wasm, PROBE_SECTION);
  if (sections.length !== 1) return undefined;
  let facts: unknown;
  try {
    facts = JSON.parse(new TextDecoder().decode(sections[0]));
  } catch {
    return undefined;
  }
  const { breakAt, stackTop, toJSON } = (facts ?? {}) as Record<string, unknown>;
  const whole = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
  if (!whole(breakAt) || !whole(stackTop) || !whole(toJSON) || breakAt % 4 !== 0 || breakAt >= stackTop)
    return undefined;
  return { layout: { breakAt, stackTop }, plain: { toJSON }, pinned: true };
}

/**
 * Whether a fresh `instance` is as its module's pinned `layout` says: its stack pointer (where the engine exports it)
 * at the pinned top, and the word at the pinned break an address above it within the memory, as the probe requires.
 */
function atRestAsPinned({ stack, memory }: Instance, layout: MemoryLayout | undefined): boolean {
  if (layout === undefined || stack === undefined || stack.pointer.value !== layout.stackTop) return false;
  const heapEnd = new Int32Array(memory.buffer, layout.breakAt, 1)[0] as number;
  return heapEnd >= layout.stackTop && heapEnd <= memory.buffer.byteLength;
}

/**
 * The facts of `wasm` that {@link PROBE_SECTION} pins, found by its probe on a throwaway instance (the build's, which
 * requires them all); `undefined` where the probe finds any of them missing.
 */
export async function probeFacts(wasm: WebAssembly.Module): Promise<(MemoryLayout & PlainFacts) | undefined> {
  const { layout, plain } = await probed(wasm);
  return layout === undefined || plain === undefined ? undefined : { ...layout, ...plain };
}

/** The {@link MemoryLayout} of `wasm`, probed once. */
export async function memoryLayout(wasm: WebAssembly.Module | undefined): Promise<MemoryLayout | undefined> {
  return (await probeModule(wasm)).layout;
}

/**
 * The break is the word of static data that an allocation moves from below its end to above it, that stays there
 * when the allocation is freed, and that is the highest such (the allocator's other words that bound it, such as the
 * top chunk, come back down or hold sizes). The stack's top is where the library puts a string argument on the
 * stack: just below the stack pointer, 16-byte aligned; the function called returns the address it was given.
 */
function measureLayout({ emscripten, memory }: Instance): MemoryLayout | undefined {
  const argumentAt = emscripten.cwrap("QTS_ArgvGetJSValueConstPointer", "number", ["string", "number"]);
  const stackTop = (argumentAt("", 0) as number) + 16;
  const before = new Int32Array(memory.buffer.slice(0, PROBE_SCAN_BYTES));
  const at = emscripten._malloc(PROBE_BYTES);
  const end = at + PROBE_BYTES;
  const grown = new Int32Array(memory.buffer.slice(0, PROBE_SCAN_BYTES));
  emscripten._free(at);
  const after = new Int32Array(memory.buffer, 0, PROBE_SCAN_BYTES / 4);
  let breakAt: number | undefined;
  let highest = 0;
  for (let i = 0; i < after.length; i++) {
    const value = after[i] as number;
    const bounds = (before[i] as number) < end && value >= end && value <= memory.buffer.byteLength;
    if (bounds && grown[i] === value && value > highest) {
      highest = value;
      breakAt = i * 4;
    }
  }
  // The stack must lie below the heap as it started: then below the break whatever the heap does.
  if (breakAt === undefined || stackTop > (before[breakAt / 4] as number)) return undefined;
  return { breakAt, stackTop };
}

export class BootedInstance {
  /** The module it was instantiated from (`undefined`: the variant's own). */
  readonly wasm: WebAssembly.Module | undefined;
  /** What it evaluated at boot besides the prelude. */
  readonly boot: Boot;
  readonly instance: Instance;
  readonly runtime: QuickJSRuntime;
  readonly ctx: QuickJSContext;
  readonly core: CoreHandles;
  /** The guest's host functions, bound to whichever run holds the instance. */
  readonly hostCall: QuickJSHandle;
  readonly call: QuickJSHandle;
  /** Reads the kinds of its values from their bits, where the engine keeps them so (see value-bits.ts). */
  readonly bits: ValueBits | undefined;
  /** Reads whether a value is plain data from the engine's objects, where they are as it reads (see plain-data.ts). */
  readonly plain: PlainData | undefined;
  /** The marshaling half (see guest/marshal.ts). */
  readonly marshal: MarshalHandles;
  /** The guest's timers, when the Web APIs are installed (see timers.ts). */
  readonly timers: TimerHandles | undefined;
  /**
   * The factory of the guarded natives' JS implementations (guest/slow-paths.ts), compiled at boot: the guest asks for
   * it on first use (`OP_CHARGE` with -1) and makes them with its own kit.
   */
  readonly slowPaths: QuickJSHandle;
  /** The internals module's `take`: a run's imports and phase mark for the modules that import it (see linker.ts). */
  readonly takeInternals: QuickJSHandle;
  /** The internals module's `provide`: one import of a run, staged as its module loads (see core/import-stage.ts). */
  readonly provideImport: QuickJSHandle;
  #holder: Holder | undefined;
  /** Handles made since {@link recordHandles}, for {@link sweepHandles}; `undefined` when not recording. */
  #made: QuickJSHandle[] | undefined;
  /** The booted memory below the break in blocks; `undefined` for a block that was all zero. */
  #image: (Uint8Array | undefined)[] = [];
  #breakAt: number | undefined;
  /** The C stack pointer at rest (see {@link MemoryLayout}). */
  #stackTop = 0;
  #bootedBreak = 0;
  /** QuickJS's count of the booted heap (runtime, context, prelude). */
  #bootedHeapBytes = 0;
  #bootedLength = 0;
  /** The library's JS-side state a run must leave as booted (see {@link #fingerprint}). */
  #bootedFingerprint = "";

  private constructor(
    wasm: WebAssembly.Module | undefined,
    instance: Instance,
    boot: Boot,
    plainFacts: PlainFacts | undefined,
  ) {
    this.wasm = wasm;
    this.boot = boot;
    this.instance = instance;
    const runtime = instance.quickjs.newRuntime();
    this.runtime = runtime;
    runtime.setMaxStackSize(MAX_STACK_BYTES);
    runtime.setInterruptHandler(() => this.#holder?.poll() ?? false);
    instance.clock.now = () => this.#holder?.dateNow() ?? Date.now();
    runtime.setModuleLoader(
      (name) => this.#holder?.load(name) ?? { error: new Error("The instance is not lent to a run") },
      (base, specifier) => this.#holder?.normalize(base, specifier) ?? specifier,
    );
    const ctx = runtime.newContext();
    this.ctx = ctx;
    this.#watchHandles(ctx);
    this.bits = ValueBits.of(ctx, instance.memory);
    this.plain = plainFacts === undefined ? undefined : PlainData.forRealm(plainFacts, ctx, instance.memory);
    this.hostCall = ctx.newFunction("", (...args) =>
      this.#holder === undefined
        ? this.#bootCall(args[0], args[1])
        : this.#holder.hostCall(...(args as Parameters<HostCall>)),
    );
    const booted = this;
    this.call = ctx.newFunction("", function (this: QuickJSHandle, ...args: QuickJSHandle[]) {
      return booted.#holder?.call(this, args);
    });
    const core = unwrap(ctx, ctx.evalCode(guestCoreSource, `${INTERNALS_MODULE}/core`, { type: "global" }));
    const internals = unwrap(ctx, ctx.callFunction(core, ctx.undefined, [this.hostCall]));
    const names = [
      "intrinsics",
      "stage",
      "evaluating",
      "hasExport",
      "runExport",
      "describeError",
      "deferred",
      "settle",
    ] as const;
    this.core = Object.fromEntries(names.map((k) => [k, ctx.getProp(internals, k)])) as CoreHandles;
    const slowPaths = ctx.evalCode(guestSlowPathsSource, `${INTERNALS_MODULE}/slow-paths`, { type: "global" });
    this.slowPaths = unwrap(ctx, slowPaths, "The guarded natives' JS implementations");
    this.timers = boot.webApis ? this.#installWebApis() : undefined;
    if (boot.intl) {
      const what = "Intl";
      const install = unwrap(ctx, ctx.evalCode(guestIntlSource, `${INTERNALS_MODULE}/intl`, { type: "global" }), what);
      unwrap(ctx, ctx.callFunction(install, ctx.undefined, [this.hostCall]), what).dispose();
      install.dispose();
    }
    for (const [name, source] of Object.entries(boot.modules))
      this.#evaluateModule(source, BOOT_PREFIX + name, `Boot module '${name}'`).dispose();
    // After the boot modules: none of them can import it.
    const internalsModule = this.#evaluateModule(INTERNALS_MODULE_SOURCE, INTERNALS_MODULE, "The internals module");
    this.takeInternals = ctx.getProp(internalsModule, "take");
    this.provideImport = ctx.getProp(internalsModule, "provide");
    internalsModule.dispose();
    const source = ctx.evalCode(guestMarshalSource, `${INTERNALS_MODULE}/marshal`, { type: "global" });
    const factory = unwrap(ctx, source);
    const marshalArgs = [this.core.intrinsics, this.hostCall, this.call];
    const object = unwrap(ctx, ctx.callFunction(factory, ctx.undefined, marshalArgs));
    const marshalNames = ["encode", "decode", "encodeArguments"] as const;
    const handles = Object.fromEntries(marshalNames.map((k) => [k, ctx.getProp(object, k)]));
    this.marshal = { object, ...handles } as MarshalHandles;
    if (boot.bindings) this.#bindGlobals();
  }

  /** Binds `console` and `report` in the image as a run's script would (see {@link bindingBoot}). */
  #bindGlobals(): void {
    const { ctx } = this;
    const what = "The globals' bindings";
    const key = ctx.newString(STAGE_KEY);
    const zero = ctx.newNumber(0);
    const args = [ctx.undefined, ctx.undefined, key, zero, zero, zero, zero, ctx.false];
    unwrap(ctx, ctx.callFunction(this.core.stage, ctx.undefined, args), what).dispose();
    const script = globalsScript(["console", "report"]);
    unwrap(ctx, ctx.evalCode(script, `${INTERNALS_MODULE}/globals`, { type: "global" }), what).dispose();
    key.dispose();
    zero.dispose();
  }

  /** Evaluates a module at boot, which QuickJS then keeps by `name`; its namespace. */
  #evaluateModule(source: string, name: string, what: string): QuickJSHandle {
    const { ctx, runtime } = this;
    const evaluated = unwrap(ctx, ctx.evalCode(source, name, { type: "module" }), what);
    const jobs = runtime.executePendingJobs();
    const state = ctx.getPromiseState(evaluated);
    const error = jobs.error ?? (state.type === "rejected" ? state.error : undefined);
    if (error !== undefined) unwrap(ctx, { error }, what);
    if (state.type !== "fulfilled") throw new Error(`${what} awaits what nothing at boot can settle`);
    return state.value;
  }

  /**
   * The guest's host calls while the instance boots, outside any run: boot modules (packages) run the guarded natives,
   * whose JS implementations (`OP_CHARGE` with -1) are made on first use; the rest, polls' charges included, are
   * nobody's and answered with nothing.
   */
  #bootCall(op: QuickJSHandle | undefined, a: QuickJSHandle | undefined): QuickJSHandle | undefined {
    const { ctx } = this;
    if (op === undefined || a === undefined || ctx.getNumber(op) !== OP_CHARGE || ctx.getNumber(a) >= 0)
      return undefined;
    return this.slowPaths.dup();
  }

  /**
   * A booted instance whose memory can hold `heapLimitBytes` of heap, with `boot`'s modules evaluated; `restorable`
   * records its image.
   */
  static async boot(
    wasm: WebAssembly.Module | undefined,
    heapLimitBytes: number,
    restorable: boolean,
    boot: Boot = PLAIN_BOOT,
  ): Promise<BootedInstance> {
    let { layout, plain, pinned } = await probeModule(wasm);
    const instance = await newInstance(wasm, heapLimitBytes);
    if (wasm !== undefined && pinned && !atRestAsPinned(instance, layout)) {
      const probe = probed(wasm);
      probes.set(wasm, probe);
      ({ layout, plain } = await probe);
    }
    const booted = new BootedInstance(wasm, instance, boot, plain);
    booted.#complete();
    if (layout === undefined) return booted;
    booted.#stackTop = layout.stackTop;
    booted.#measure(layout.breakAt);
    if (restorable) booted.#record();
    return booted;
  }

  /**
   * Whether the instance can be taken by a run whose memory may grow to `bytes`: booted with the maximum for that cap
   * (its class, or the cap itself: `bootedMaximum`), and its memory within the cap, with the room {@link release}
   * keeps below it when an earlier run left it grown.
   */
  fits(bytes: number): boolean {
    const { memory, classBytes } = this.instance;
    const length = memory.buffer.byteLength;
    const room = length > this.#bootedLength ? KEPT_ROOM_BYTES : 0;
    return classBytes === bootedMaximum(this.wasm, bytes) && length + room <= bytes;
  }

  /** Caps the memory at `bytes` for the run that takes the instance ({@link fits} it). */
  capMemory(bytes: number): this {
    this.instance.maxBytes = bytes;
    return this;
  }

  /** Lends the instance to a run, with its memory limit and a fresh `Math.random` seed staged by the caller. */
  lend(holder: Holder, heapLimitBytes: number): void {
    this.#holder = holder;
    this.runtime.setMemoryLimit(heapLimitBytes);
  }

  /** `true` while `holder` holds the instance. */
  heldBy(holder: Holder): boolean {
    return this.#holder === holder;
  }

  /**
   * The heap's high-water mark while lent: the booted heap plus what the run's allocations added to the allocator's
   * footprint (its break only grows, so this is a true peak, read without touching the VM). Where the break is not
   * known, QuickJS's own count of the live heap (a walk of every object); `undefined` when even that fails (out of
   * memory).
   */
  heapBytes(): number | undefined {
    const { memory } = this.instance;
    if (this.#breakAt !== undefined) {
      const reached = new Int32Array(memory.buffer, this.#breakAt, 1)[0] as number;
      return this.#bootedHeapBytes + Math.max(0, reached - this.#bootedBreak);
    }
    try {
      const usage = this.runtime.computeMemoryUsage();
      const used = this.ctx.getProp(usage, "memory_used_size");
      const bytes = this.ctx.getNumber(used);
      used.dispose();
      usage.dispose();
      return bytes;
    } catch {
      return undefined;
    }
  }

  /**
   * Whether the heap of the run holding the instance reached so far that its memory may have grown past where an
   * instance is kept ({@link release}: past {@link MAX_KEPT_MEMORY_BYTES}, or to within {@link KEPT_ROOM_BYTES} of the
   * run's cap), so that the host boots another for the next run: decided by the highest break the run reached, the same
   * for the same program on every instance, not by the memory's length, which depends on the length an earlier run
   * left it at. A memory whose break stayed within the booted length never grew; `false` where the break is not known.
   */
  mayOutgrowKeeping(): boolean {
    if (this.#breakAt === undefined) return false;
    const reached = new Int32Array(this.instance.memory.buffer, this.#breakAt, 1)[0] as number;
    if (reached <= memoryHolding(0)) return false;
    const { maxBytes } = this.instance;
    const furthest = Math.min(maxBytes, memoryHolding(reached * RESIZE_OVERGROWTH));
    return furthest > MAX_KEPT_MEMORY_BYTES || furthest + KEPT_ROOM_BYTES > maxBytes;
  }

  /**
   * Takes the instance back from its run: whether its memory can get its booted image back ({@link restore}). A
   * `sound` instance (no host fault, no abort, no growth refused) whose library state is as booted can, its memory
   * as booted or grown to at most {@link MAX_KEPT_MEMORY_BYTES} with room left below its maximum; any other is for
   * dropping. A grown memory stays grown: above the booted image it is zeros again, up to the break as the restore
   * rewrites it and above it never written, so the next run cannot tell it from a fresh instance's (not by its fuel
   * either: see `Meter.refundHostCall`), and a run that needs the memory again skips the growth and its fresh pages.
   * Only a run within about 5% of its cap can: Emscripten grows by a share of the memory's size (at least 5%) and
   * gives up past the cap, so how near the cap a run gets depends on the size it grows from (SECURITY.md).
   */
  release(sound: boolean): boolean {
    this.#holder = undefined;
    const { memory, growthRefused, maxBytes } = this.instance;
    const length = memory.buffer.byteLength;
    // (An instance booted without an image has a #bootedLength of 0.)
    if (!sound || this.#breakAt === undefined || growthRefused || this.#bootedLength === 0) return false;
    if (length > this.#bootedLength && (length > MAX_KEPT_MEMORY_BYTES || length + KEPT_ROOM_BYTES > maxBytes))
      return false;
    return this.#fingerprint() === this.#bootedFingerprint;
  }

  /**
   * Gives an instance {@link release} found fit its booted memory back; `false` (for dropping) when the allocator's
   * break is not where a run can leave it or the C stack pointer is not back at its top. What a run can have written
   * is rewritten: static data, the C stack from its deepest reach ({@link #stackReach}; the rest of it, zero in the
   * image, was never written), and the heap up to the break (nothing above it was ever written).
   */
  restore(): boolean {
    const bytes = new Uint8Array(this.instance.memory.buffer);
    const reached = new Int32Array(bytes.buffer, this.#breakAt as number, 1)[0] as number;
    const deepest = this.#stackReach();
    if (reached < this.#bootedBreak || reached > bytes.length || deepest === undefined) return false;
    const { low, top } = this.stack;
    this.#rewrite(bytes, 0, low);
    bytes.fill(0, deepest, top);
    this.#rewrite(bytes, top, Math.min(bytes.length, Math.ceil(reached / BLOCK) * BLOCK));
    this.#markStack();
    return true;
  }

  /**
   * The lowest byte of the C stack written since the memory last equalled the image: the stack pointer's low-water
   * mark less the red zone, where the engine keeps the mark ({@link Instance.stack}); the whole stack where it does
   * not. `undefined` when the stack pointer is not at its top: a frame still open would hold something live.
   */
  #stackReach(): number | undefined {
    const { stack } = this.instance;
    const { low, top } = this.stack;
    if (stack === undefined) return low;
    const mark = stack.low.value as number;
    if (stack.pointer.value !== top || mark > top) return undefined;
    return Math.max(low, mark - STACK_MARK.redZoneBytes);
  }

  /** Sets the stack's low-water mark to the top: done whenever the memory equals the image. */
  #markStack(): void {
    const { stack } = this.instance;
    if (stack !== undefined) stack.low.value = this.#stackTop;
  }

  /** Rewrites `[from, to)` from the image (zeros past it). */
  #rewrite(bytes: Uint8Array, from: number, to: number): void {
    for (let start = from; start < to; ) {
      const index = Math.floor(start / BLOCK);
      const end = Math.min(to, (index + 1) * BLOCK);
      const block = this.#image[index];
      if (block === undefined) bytes.fill(0, start, end);
      else bytes.set(block.subarray(start - index * BLOCK, end - index * BLOCK), start);
      start = end;
    }
  }

  /**
   * Records the handles made from now on, which {@link sweepHandles} disposes: a session's memory outlives the cell
   * that made them (a run's handles go with the restore instead).
   */
  recordHandles(): void {
    this.#made = [];
  }

  /** Disposes the handles made since {@link recordHandles} that are still alive, and stops recording. */
  sweepHandles(): void {
    const made = this.#made ?? [];
    this.#made = undefined;
    for (const handle of made) if (handle.alive) handle.dispose();
  }

  /**
   * The bytes of memory a session's state spans: from 0 to the allocator's break, in whole blocks (above it, memory
   * was never written); `undefined` where the break is not known.
   */
  span(): number | undefined {
    if (this.#breakAt === undefined) return undefined;
    const bytes = this.instance.memory.buffer.byteLength;
    const reached = new Int32Array(this.instance.memory.buffer, this.#breakAt, 1)[0] as number;
    return reached < this.#bootedBreak || reached > bytes
      ? undefined
      : Math.min(bytes, Math.ceil(reached / BLOCK) * BLOCK);
  }

  /**
   * The C stack, `[low, top)`: below the span, but nothing of a session's state lies there between its cells (the
   * stack pointer is back at the top), so copies of the state leave it out.
   */
  get stack(): { low: number; top: number } {
    return { low: Math.max(0, this.#stackTop - C_STACK_BYTES), top: this.#stackTop };
  }

  /**
   * What tells instances whose memory can take each other's state: the engine's booted layout and the addresses the
   * library holds into it (its runtime, context and the handles made at boot). Equal on every platform for the same
   * wasm and boot, as booting is deterministic.
   */
  get engineKey(): string {
    const handles = [
      this.hostCall,
      this.call,
      this.takeInternals,
      this.slowPaths,
      ...Object.values(this.core),
      ...Object.values(this.marshal),
    ];
    if (this.timers !== undefined) handles.push(...Object.values(this.timers));
    const ptr = (value: unknown) => (value as { value: number }).value;
    const { rt, ctx } = this.ctx as unknown as { rt: unknown; ctx: unknown };
    return [this.#breakAt, this.#stackTop, this.#bootedBreak, ptr(rt), ptr(ctx), ...handles.map(ptr)].join(".");
  }

  /**
   * Takes a session's state in place of its own: `write` fills memory from 0 to `span` (at most the memory's length
   * once grown to `byteLength`). The memory grows through the engine's own allocator, so the library's views of it
   * follow. Above `span` is what the state's allocator has never handed out: zeros, but for the headers the growth's
   * allocation left (an instance from the pool is as booted, and its boot's heap lies below any session's break),
   * which no allocator reads as data (it clears what `calloc` hands out). Such an instance is never restored for a run.
   */
  adopt(byteLength: number, span: number, write: (memory: Uint8Array) => void): void {
    const { memory, emscripten } = this.instance;
    // An allocation that takes the break to the length makes the engine grow its memory (and its views) to it.
    for (let tries = 0; memory.buffer.byteLength < byteLength; tries++) {
      const at = tries < 4 ? emscripten._malloc(byteLength - (this.span() ?? 0)) : 0;
      if (at === 0) throw new RangeError("The session's memory does not fit this instance's memory limit");
      emscripten._free(at);
    }
    write(new Uint8Array(memory.buffer, 0, span));
  }

  /** {@link release}, then {@link restore}: whether the instance holds its booted memory again. */
  reclaim(sound: boolean): boolean {
    return this.release(sound) && this.restore();
  }

  /**
   * Evaluates the Web APIs' guest halves in order (see web-apis.ts), each given the host function and the kit they
   * share, and `fetch` when the sandbox has a fetch setting; returns the host's handles on the guest's timers.
   */
  #installWebApis(): TimerHandles {
    const { ctx } = this;
    const kit = ctx.newObject();
    for (const [name, source] of WEB_API_SOURCES) {
      const what = `The Web API '${name}'`;
      const install = unwrap(ctx, ctx.evalCode(source, `${INTERNALS_MODULE}/web/${name}`, { type: "global" }), what);
      unwrap(ctx, ctx.callFunction(install, ctx.undefined, [this.hostCall, kit]), what).dispose();
      install.dispose();
    }
    if (this.boot.fetch) {
      const installFetch = ctx.getProp(kit, "installFetch");
      unwrap(ctx, ctx.callFunction(installFetch, ctx.undefined, []), "The Web API 'fetch'").dispose();
      installFetch.dispose();
    }
    const timers = {
      next: ctx.getProp(kit, "nextTimer"),
      fire: ctx.getProp(kit, "fireTimer"),
      clear: ctx.getProp(kit, "clearTimers"),
    };
    kit.dispose();
    return timers;
  }

  /**
   * Makes now what the library would otherwise make on first use: its handles then point into the image, and every
   * instance, restorable or not, starts its runs from the same heap, so a program spends the same fuel on each (a
   * pool's first run, on an instance booted for it alone, spent 1% less when this and the marshaling half were made
   * on first use).
   */
  #complete(): void {
    // Handles the library caches on its objects.
    void this.ctx.global;
    this.ctx.newBigInt(0n).dispose();
    this.runtime.computeMemoryUsage().dispose();
  }

  /** Keeps what {@link recordHandles} asks for: every handle the library makes for this context. */
  #watchHandles(ctx: QuickJSContext): void {
    type Memory = { heapValueHandle(ptr: number, ...rest: unknown[]): QuickJSHandle };
    const memory = (ctx as unknown as { memory: Memory }).memory;
    const make = memory.heapValueHandle.bind(memory);
    memory.heapValueHandle = (ptr, ...rest) => {
      const handle = make(ptr, ...rest);
      this.#made?.push(handle);
      return handle;
    };
  }

  /** Where the heap stands at boot, for {@link heapBytes}. */
  #measure(breakAt: number): void {
    const usage = this.runtime.computeMemoryUsage();
    const used = this.ctx.getProp(usage, "memory_used_size");
    this.#bootedHeapBytes = this.ctx.getNumber(used);
    used.dispose();
    usage.dispose();
    this.#breakAt = breakAt;
    this.#bootedBreak = new Int32Array(this.instance.memory.buffer, breakAt, 1)[0] as number;
  }

  /**
   * Records the memory up to the allocator's break (above it, memory was never written), the C stack zeroed: it holds
   * nothing live at rest, and a restore then rewrites only the part a run reached. The stack's blocks are known zero
   * without a scan: they were 79 of the 89 blocks of a plain boot, and scanning them was most of a first run's record
   * on cold code.
   */
  #record(): void {
    const { memory } = this.instance;
    this.#bootedLength = memory.buffer.byteLength;
    this.#bootedFingerprint = this.#fingerprint();
    const bytes = new Uint8Array(memory.buffer);
    const { low, top } = this.stack;
    // Only where the boot reached: the pages below were never touched, and stay untouched.
    bytes.fill(0, this.#stackReach() ?? low, top);
    this.#markStack();
    const end = Math.min(bytes.length, Math.ceil(this.#bootedBreak / BLOCK) * BLOCK);
    for (let start = 0; start < end; start += BLOCK) {
      const stop = Math.min(start + BLOCK, end);
      const zero = (start >= low && stop <= top) || allZero(bytes.subarray(start, stop));
      this.#image.push(zero ? undefined : bytes.slice(start, stop));
    }
  }

  /**
   * The library's JS-side state that must match the memory: host references (functions), contexts and the handles
   * it caches on its objects. A run that changed any of it (it should not be able to) makes the instance unfit.
   */
  #fingerprint(): string {
    const { hostRefs, contextMap } = this.runtime as unknown as {
      hostRefs: { nextId: number; freelist: unknown[]; groups: Map<unknown, Map<unknown, unknown>> };
      contextMap: Map<unknown, unknown>;
    };
    const refs = [...hostRefs.groups.values()].reduce((sum, group) => sum + group.size, 0);
    return [
      hostRefs.nextId,
      hostRefs.freelist.length,
      refs,
      contextMap.size,
      Object.keys(this.runtime).length,
      Object.keys(this.ctx).length,
    ].join();
  }
}

/** Whether a block (whole words, word-aligned) holds only zeros. */
function allZero(block: Uint8Array): boolean {
  const words = new Int32Array(block.buffer, block.byteOffset, block.byteLength / 4);
  for (let i = 0; i < words.length; i++) if (words[i] !== 0) return false;
  return true;
}

function unwrap(ctx: QuickJSContext, result: VmCallResult<QuickJSHandle>, what = "The prelude"): QuickJSHandle {
  if (result.error === undefined) return result.value;
  const error = ctx.dump(result.error);
  throw new Error(`${what} failed to boot: ${JSON.stringify(error)}`);
}
