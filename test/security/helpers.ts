/**
 * Shared helpers of the security suite: sandboxes with small safety caps, a snapshot of the host's intrinsics and
 * of the values a caller bridged in, and a check that a normal run still works after a hostile one.
 * @module
 */
import { expect } from "vitest";
import { createSandbox, runCode } from "../../node/index.js";
import type { CodeExecutionOptions, CodeExecutionResult, RunCode, SandboxOptions } from "../../src/core/types.js";

export { runCode };

/** A runner with custom host-level settings (as the conformance suite builds one), on the caller's thread. */
export function sandbox(settings: SandboxOptions): RunCode {
  return createSandbox({ ...settings, threads: false }).runCode;
}

/** A runner whose safety cap fires after 300 ms of guest CPU (hostile loops end quickly). */
export const capped = sandbox({ safetyCap: { cpuTimeMs: 300 } });

/** Strings that betray a host path, a host stack frame or host source. */
export const HOST_MARKERS = ["node_modules", "/work", "file://", "node:internal", "HOST_SECRET"] as const;

/** The message of every locked function constructor, by label. */
export const disabled = (label: string) =>
  `TypeError: ${label} constructor is disabled in the sandbox: code cannot be compiled from strings`;

/**
 * Prepended to attack programs: `attempt(f)` returns `f()`'s value or `"<name>: <message>"` of what it threw, so an
 * attack's exact outcome is a result value.
 */
export const ATTEMPT =
  "const attempt = (f) => { try { return f(); } catch (e) { return e === null || typeof e !== 'object' ? 'thrown ' + String(e) : e.name + ': ' + e.message; } };\n" +
  "const attemptAsync = async (f) => { try { return await f(); } catch (e) { return e === null || typeof e !== 'object' ? 'thrown ' + String(e) : e.name + ': ' + e.message; } };\n";

type Snapshot = Record<string, unknown>;

const ownKeys = (value: object) => Reflect.ownKeys(value).map(String).sort();

/** Descriptor-level view of an object's own properties (accessors and values, not just names). */
function describeOwn(value: object): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Reflect.ownKeys(value)) {
    const d = Object.getOwnPropertyDescriptor(value, key);
    if (d === undefined) continue;
    const shown =
      d.get !== undefined || d.set !== undefined
        ? `accessor ${String(d.get)} ${String(d.set)}`
        : typeof d.value === "function"
          ? `function ${(d.value as { name: string }).name}`
          : typeof d.value === "object" && d.value !== null
            ? "object"
            : String(d.value);
    out[String(key)] = `${shown} w${d.writable} e${d.enumerable} c${d.configurable}`;
  }
  return out;
}

/**
 * Node tags a promise with its async ids once async hooks are on (the threaded pool's AsyncLocalStorage turns them
 * on): the platform's bookkeeping, not the guest's doing.
 */
function isNodeAsyncTag(key: string | symbol): boolean {
  return (
    typeof key === "symbol" && (key.description === "async_id_symbol" || key.description === "trigger_async_id_symbol")
  );
}

/** Deep, function-aware copy of a caller's bridged value, for before/after comparison. */
export function shape(value: unknown, seen = new Map<object, string>(), path = "$"): unknown {
  if (typeof value === "function") return `fn ${value.name}/${value.length} ${ownKeys(value).join(",")}`;
  if (typeof value !== "object" || value === null) {
    return typeof value === "bigint" ? `${value}n` : Object.is(value, -0) ? "-0" : value;
  }
  const known = seen.get(value);
  if (known !== undefined) return `ref ${known}`;
  seen.set(value, path);
  const proto = Object.getPrototypeOf(value) as object | null;
  const head = `${proto === null ? "null" : (proto.constructor as { name?: string } | undefined)?.name}`;
  if (value instanceof Map) {
    return [head, [...value].map(([k, v], i) => [shape(k, seen, `${path}.k${i}`), shape(v, seen, `${path}.v${i}`)])];
  }
  if (value instanceof Set) return [head, [...value].map((v, i) => shape(v, seen, `${path}.s${i}`))];
  if (value instanceof Date) return [head, value.getTime()];
  if (ArrayBuffer.isView(value)) return [head, [...new Uint8Array(value.buffer, value.byteOffset, value.byteLength)]];
  if (value instanceof ArrayBuffer) return [head, [...new Uint8Array(value)]];
  const entries = Reflect.ownKeys(value)
    .filter((key) => !isNodeAsyncTag(key))
    .map((key) => {
      const d = Object.getOwnPropertyDescriptor(value, key) as PropertyDescriptor;
      return [String(key), d.get ? "getter" : shape(d.value, seen, `${path}.${String(key)}`), d.enumerable];
    });
  return [head, Object.isFrozen(value), entries];
}

/** The host state an attack must not change. */
export function snapshotHost(bridged: unknown): Snapshot {
  return {
    objectProto: describeOwn(Object.prototype),
    functionProto: describeOwn(Function.prototype),
    arrayProto: describeOwn(Array.prototype),
    promiseProto: describeOwn(Promise.prototype),
    globalKeys: ownKeys(globalThis),
    jsonStringify: JSON.stringify({ a: [1, "x"] }),
    emptyObjectKeys: Object.keys({}),
    // biome-ignore lint/suspicious/noExplicitAny: probing for pollution on a fresh object is the point.
    polluted: [({} as any).polluted, ([] as any).polluted, ((() => {}) as any).polluted],
    bridged: shape(bridged),
  };
}

/** Runs an attack, asserts the host unchanged, then proves the sandbox still runs normal code. */
export async function attack(
  run: RunCode,
  source: string,
  options: CodeExecutionOptions = {},
): Promise<CodeExecutionResult> {
  const bridged = {
    globals: options.globals,
    imports: options.imports,
    args: typeof options.execute === "object" ? options.execute.args : undefined,
  };
  const before = snapshotHost(bridged);
  const result = await run(source, { language: "javascript", ...options });
  expect(snapshotHost(bridged)).toEqual(before);
  for (const text of [result.error?.stack ?? "", result.error?.message ?? "", result.error?.filename ?? ""]) {
    for (const marker of HOST_MARKERS) expect(text).not.toContain(marker);
  }
  await expectHealthy(run);
  return result;
}

/** A normal run right after: the sandbox still gives the right answer. */
export async function expectHealthy(run: RunCode = runCode): Promise<void> {
  const after = await run("export default [1, 2, 3].map((x) => x * 2).concat(typeof process, typeof eval)", {
    language: "javascript",
  });
  expect({ status: after.status, result: after.result }).toEqual({
    status: "success",
    result: [2, 4, 6, "undefined", "undefined"],
  });
}

/** `status` and `result` (or `error` name and message) of a result, for one exact comparison. */
export function outcome(result: CodeExecutionResult): unknown {
  return result.status === "success"
    ? { status: "success", result: result.result }
    : { status: result.status, error: `${result.error?.name}: ${result.error?.message}` };
}
