/**
 * A result's wire text (src/core/result-wire.ts), as `POST /run` and MCP's `run_code` answer it: a result whose fields
 * JSON writes as the wire encoding does takes a shorter path, which must give the very text the encoder gives, and
 * within the same length; any other result (a `-0`, an `undefined`, a log, an error, a key JSON would treat apart)
 * goes through the encoder as before.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { resultWireText } from "../../src/core/result-wire.js";
import type { CodeExecutionResult } from "../../src/core/types.js";
import { toWireText } from "../../src/values/wire.js";

const success = (result: unknown, more: Partial<CodeExecutionResult> = {}): CodeExecutionResult => ({
  status: "success",
  result,
  reports: [],
  logs: [],
  durationMs: 0.75,
  memoryUsedBytes: 363_637,
  fuelUsed: 15_438,
  ...more,
});

const CASES: [string, CodeExecutionResult][] = [
  ["a number", success(2)],
  ["a string with a lone surrogate and a quote", success('a"\uD800b')],
  ["a boolean", success(true)],
  ["null", success(null)],
  ["fuel redone", success(0, { fuelRedone: 1_200 })],
  ["-0", success(-0)],
  ["NaN", success(Number.NaN)],
  ["undefined", success(undefined)],
  ["a bigint", success(10n)],
  ["an object", success({ $t: "date", a: [1] })],
  ["a report", success(1, { reports: [{ a: 1 }] })],
  ["a log", success(1, { logs: [{ level: "log", args: ["x"], timestamp: 1 }] })],
  [
    "an error",
    { status: "error", error: { name: "Error", message: "boom" }, reports: [], logs: [], durationMs: 1, fuelUsed: 9 },
  ],
];

afterEach(() => {
  vi.restoreAllMocks();
});

describe("resultWireText", () => {
  it.each(CASES)("gives the encoder's own text for %s", (_, result) => {
    expect(resultWireText(result, 10_000)).toBe(toWireText(result));
  });

  it("writes a flat result as its JSON text", () => {
    expect(resultWireText(success(2), 10_000)).toBe(
      '{"status":"success","result":2,"reports":[],"logs":[],"durationMs":0.75,"memoryUsedBytes":363637,"fuelUsed":15438}',
    );
  });

  it("answers a memory result when a flat result's text would pass the length", () => {
    const result = success("x".repeat(200));
    const text = resultWireText(result, 150);
    expect(JSON.parse(text)).toEqual({
      status: "memory",
      error: {
        name: "MemoryError",
        message:
          "The run ended 'success', but its result, reports and logs take more than 150 characters of JSON to send",
      },
      reports: [],
      logs: [],
      durationMs: 0.75,
      memoryUsedBytes: 363_637,
    });
    expect(resultWireText(result, toWireText(result).length)).toBe(toWireText(result));
  });

  it("writes no text of a flat result whose text could pass the length: the encoder measures it first", () => {
    const result = success("x".repeat(1_000_000));
    const stringify = vi.spyOn(JSON, "stringify");
    expect(JSON.parse(resultWireText(result, 1_000)).status).toBe("memory");
    expect(stringify.mock.calls.some(([value]) => value === result)).toBe(false);
  });

  it("escapes a key the wire encoding escapes, and reads no inherited field", () => {
    const keyed = { ...success(1), $extra: 1 } as CodeExecutionResult;
    expect(resultWireText(keyed, 10_000)).toBe(toWireText(keyed));
    expect(resultWireText(keyed, 10_000)).toContain('"$$extra":1');
    const inherited = Object.assign(Object.create({ extra: 1 }), success(1)) as CodeExecutionResult;
    expect(resultWireText(inherited, 10_000)).toBe(toWireText(inherited));
  });
});
