/** Interim: replaced by the snapshot-codec branch. */
export const SNAPSHOT_FORMAT = 1;
export interface SnapshotHeader {
  runcode: string;
  engine: string;
  boot: string;
  memoryLimitBytes: number;
  functions: string[];
  cells: number;
  memoryBytes: number;
  span: number;
}
export type BasePage = (index: number) => Uint8Array | undefined;
export class SnapshotError extends Error {
  readonly code = "invalid_snapshot";
}
export interface DecodedSnapshot {
  header: SnapshotHeader;
  writeInto(memory: Uint8Array, base: BasePage): void;
}
export async function encodeSnapshot(header: SnapshotHeader, memory: Uint8Array, _base: BasePage): Promise<Uint8Array> {
  const text = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(4 + text.length + header.span);
  new DataView(out.buffer).setUint32(0, text.length);
  out.set(text, 4);
  out.set(memory.subarray(0, header.span), 4 + text.length);
  return out;
}
export async function decodeSnapshot(
  bytes: Uint8Array,
  expected: { runcode: string; maxMemoryBytes: number },
): Promise<DecodedSnapshot> {
  if (bytes.length < 4) throw new SnapshotError("cut short");
  const length = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + length))) as SnapshotHeader;
  if (header.runcode !== expected.runcode || header.span > expected.maxMemoryBytes) throw new SnapshotError("bad");
  return { header, writeInto: (memory) => memory.set(bytes.subarray(4 + length, 4 + length + header.span)) };
}
