/** A process record for store tests: idle, never run, with `patch` over it. */
import type { ProcessRecord } from "../../../src/host/processes/storage.js";

export const processRecord = (pid: number, patch: Partial<ProcessRecord> = {}): ProcessRecord => ({
  pid,
  tenant: "anonymous",
  state: "idle",
  exitState: null,
  code: "1",
  timeoutMs: 1000,
  output: {},
  stdout: "",
  stderr: "",
  error: null,
  truncated: { stdout: false, stderr: false, output: false },
  runs: 1,
  createdAt: 0,
  startedAt: null,
  finishedAt: null,
  ...patch,
});
