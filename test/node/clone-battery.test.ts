/**
 * The battery of the HTML structured clone algorithm (test/conformance/clone-battery.ts) as an oracle: Node's own
 * `structuredClone` passes it (but for where Node 20 departs from the algorithm), and so does the sandbox's.
 */
import { describe, expect, it } from "vitest";
import { runCode } from "../../node/index.js";
import { BATTERY_CASES, type Clone, cloneBattery, sandboxBattery } from "../conformance/clone-battery.js";

describe("the structured clone battery: Node's own structuredClone and the sandbox's", () => {
  it("Node's passes it but for its departures from the HTML algorithm; the sandbox's passes it whole", async () => {
    expect(cloneBattery(structuredClone as Clone).failures).toEqual([
      // The algorithm refuses to transfer a detached buffer; Node 20 clones it.
      "A detached ArrayBuffer cannot be transferred: did not throw",
      // The algorithm throws a DataCloneError for what is not transferable; Node 20 a TypeError of its own.
      'Transferring a non-transferable object fails: name: "TypeError" instead of "DataCloneError"',
    ]);
    expect(await sandboxBattery(runCode)).toEqual({ ran: BATTERY_CASES, failures: [] });
  });
});
