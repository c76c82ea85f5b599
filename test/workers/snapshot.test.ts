/**
 * The session snapshot format inside workerd (its CompressionStream, crypto.subtle and DataView): a snapshot with raw,
 * deflated, zero and base pages round trips byte for byte, and a one-bit change is refused, as in Node
 * (test/core/snapshot.test.ts has the whole catalogue).
 */
import { describe, expect, it } from "vitest";
import { decodeSnapshot, encodeSnapshot, SNAPSHOT_PAGE_BYTES, SnapshotError } from "../../src/core/snapshot.js";

const PAGE = SNAPSHOT_PAGE_BYTES;
const MiB = 1024 * 1024;

describe("session snapshots in workerd", () => {
  it("round trip and a one-bit change", async () => {
    const image = new Uint8Array(4 * PAGE).fill(7);
    const base = (i: number) => (i < 4 ? image.subarray(i * PAGE, (i + 1) * PAGE) : undefined);
    const span = MiB + 10 * PAGE + 3;
    const memory = new Uint8Array(span);
    memory.set(image);
    memory.fill(0, PAGE, 2 * PAGE);
    for (let at = 4 * PAGE; at < 4 * PAGE + MiB; at += 65536)
      crypto.getRandomValues(memory.subarray(at, Math.min(at + 65536, 4 * PAGE + MiB)));
    memory.set(new TextEncoder().encode("let x = 1;\n".repeat(2000)), 4 * PAGE + MiB);
    const header = {
      runcode: "0.1.0",
      engine: "e",
      boot: "",
      memoryLimitBytes: 2 * MiB,
      functions: [],
      cells: 1,
      memoryBytes: 2 * MiB,
      span,
    };
    const expected = { runcode: "0.1.0", maxMemoryBytes: 2 * MiB };
    const bytes = await encodeSnapshot(header, memory, base);
    expect(bytes.length).toBeLessThan(MiB + 4 * PAGE);
    const target = new Uint8Array(span).fill(1);
    (await decodeSnapshot(bytes, expected)).writeInto(target, base);
    expect(target.every((byte, i) => byte === memory[i])).toBe(true);
    const changed = bytes.slice();
    changed[bytes.length - 100] = (changed[bytes.length - 100] as number) ^ 4;
    await expect(decodeSnapshot(changed, expected)).rejects.toThrow(new SnapshotError("changed (checksum mismatch)"));
  });
});
