/**
 * The Web APIs against a hostile guest: what the host asks of their guest code (the earliest timer, firing one) and
 * the bound of `crypto.getRandomValues` hold whatever the guest changed of the built-ins, and nothing the host keeps
 * for them outlives a run.
 */
import { describe, expect, it } from "vitest";
import { ATTEMPT, sandbox } from "./helpers.js";

const runCode = sandbox({ webApis: true, safetyCap: { cpuTimeMs: 2_000 } });
const js = { language: "javascript" } as const;

describe("Web APIs under a hostile guest", () => {
  it("timers keep their order and the run its end after the guest replaced the built-ins they could use", async () => {
    const source = `for (const key of ["get", "set", "delete", "has"]) Map.prototype[key] = () => { throw new Error("map"); };
Reflect.apply = () => { throw new Error("apply"); };
Function.prototype.call = Function.prototype.apply = () => { throw new Error("call"); };
for (const key of ["0", "1", "2", "3", "due", "seq", "at", "callback"]) {
  Object.defineProperty(Array.prototype, key, { set() { throw new Error("array " + key); }, get() { return 0; } });
  Object.defineProperty(Object.prototype, key, { set() { throw new Error("object " + key); }, get() { return 0; } });
}
Math.max = () => 0;
let log = "";
setTimeout(() => (log += "b"), 20);
setTimeout(() => (log += "a"), 10);
const id = setTimeout(() => (log += "cleared"), 15);
clearTimeout(id);
export default await new Promise((resolve) => setTimeout(() => resolve(log), 30));`;
    const result = await runCode(source, js);
    expect([result.status, result.error, result.result]).toEqual(["success", undefined, "ab"]);
  });

  it("getRandomValues reads the array's real length, whatever its own properties claim", async () => {
    const source = `${ATTEMPT}const big = new Uint8Array(70_000);
for (const key of ["length", "byteLength", "byteOffset", "buffer"]) Object.defineProperty(big, key, { get: () => 16 });
for (const key of ["length", "byteLength"]) Object.defineProperty(Object.getPrototypeOf(Uint8Array.prototype), key, { get: () => 16 });
export default attempt(() => crypto.getRandomValues(big).length);`;
    expect(await runCode(source, js)).toMatchObject({
      status: "success",
      result:
        "QuotaExceededError: crypto.getRandomValues: the array's 70000 bytes exceed the 65536 bytes of entropy a call may ask for",
    });
  });

  it("a run that ends with timers pending leaves none to the next: each starts its timer clock at 0", async () => {
    const first = await runCode("setInterval(() => {}, 1); throw new Error('ends with an interval set')", js);
    expect(first.status).toBe("error");
    const second = await runCode(
      "const fired = []; setTimeout(() => fired.push(Event && new Event('x').timeStamp), 5);\nexport default fired",
      js,
    );
    // An event's timeStamp is the timer clock (5) plus the 1 ms by which the time origin precedes the run.
    expect([second.status, second.result]).toEqual(["success", [6]]);
  });
});
