import { describe, expect, it } from "vitest";
import type { CodeExecutionResult } from "../../src/core/types.js";
import { toWire } from "../../src/values/wire.js";
import { SessionBranches } from "../../web/branches.js";
import {
  isCell,
  isClose,
  isFork,
  isOpen,
  isOpened,
  isSnapshot,
  isStopCell,
  isStopping,
  type SessionSettings,
  type ToWorker,
} from "../../web/messages.js";
import { toPayload, toSessionParts } from "../../web/payload.js";
import { SandboxRunner } from "../../web/runner.js";
import { defaultSession } from "../../web/session.js";

const NONCE = "0123456789abcdef0123";
const SETTINGS: SessionSettings = { globals: {}, imports: {}, webApis: false };

describe("session messages: guards", () => {
  it("accept well-formed session messages", () => {
    expect(isOpen({ type: "open", nonce: NONCE, session: "1", settings: SETTINGS })).toBe(true);
    const snapshot = new Uint8Array([1, 2]);
    expect(isOpen({ type: "open", nonce: NONCE, session: "1", settings: SETTINGS, snapshot })).toBe(true);
    expect(isFork({ type: "fork", nonce: NONCE, session: "2", from: "1" })).toBe(true);
    expect(isClose({ type: "close", nonce: NONCE, session: "1" })).toBe(true);
    expect(isCell({ type: "cell", nonce: NONCE, session: "1", cell: { source: "1" } })).toBe(true);
    expect(isStopCell({ type: "stop-cell", nonce: NONCE })).toBe(true);
    expect(isOpened({ type: "opened", nonce: NONCE }, NONCE)).toBe(true);
    expect(isStopping({ type: "stopping", nonce: NONCE }, NONCE)).toBe(true);
    expect(isSnapshot({ type: "snapshot", nonce: NONCE, snapshot })).toBe(true);
    expect(isSnapshot({ type: "snapshot", nonce: NONCE })).toBe(true);
  });

  it.each([
    { type: "open", nonce: NONCE, session: "", settings: SETTINGS },
    { type: "open", nonce: NONCE, session: "1", settings: { ...SETTINGS, webApis: 1 } },
    { type: "open", nonce: NONCE, session: "1", settings: { ...SETTINGS, modules: "x" } },
    { type: "open", nonce: NONCE, session: "1", settings: SETTINGS, snapshot: [1, 2] },
    { type: "fork", nonce: NONCE, session: "2" },
    { type: "close", nonce: "short", session: "1" },
    { type: "cell", nonce: NONCE, session: "1", cell: { source: 1 } },
    { type: "cell", nonce: NONCE, cell: { source: "1" } },
  ])("refuse %j", (data) => {
    expect([isOpen(data), isFork(data), isClose(data), isCell(data)]).toEqual([false, false, false, false]);
  });

  it("refuse a snapshot that is not bytes, and answers of another nonce", () => {
    expect(isSnapshot({ type: "snapshot", nonce: NONCE, snapshot: [1] })).toBe(false);
    expect(isSnapshot({ type: "snapshot", nonce: "short" })).toBe(false);
    expect(isOpened({ type: "opened", nonce: NONCE }, `${NONCE}x`)).toBe(false);
    expect(isStopping({ type: "stopping", nonce: NONCE }, `${NONCE}x`)).toBe(false);
  });
});

describe("session parts of a payload", () => {
  it("settings take modules, memory cap, host values and Web APIs; the cell takes the entry, language, filename", () => {
    const session = defaultSession();
    session.files.push({ name: "./m.ts", source: "export const m = 1" });
    session.memoryLimitBytes = "16777216";
    session.filename = "cell.ts";
    session.executeFn = "main";
    session.webApis = true;
    session.files[0] = { name: "main.ts", source: "x + 1" };
    const { settings, cell } = toSessionParts(toPayload(session));
    expect(settings).toEqual({
      globals: { input: { kind: "json", value: [1, 2, 3] } },
      imports: {},
      webApis: true,
      modules: { "./m.ts": "export const m = 1" },
      memoryLimitBytes: 16777216,
    });
    expect(cell).toEqual({ source: "x + 1", language: "typescript", filename: "cell.ts" });
  });
});

/** A stand-in worker: records what the page posts and lets the test answer (or forge) messages. */
class FakeWorker extends EventTarget {
  posted: ToWorker[] = [];
  terminated = false;
  postMessage(message: ToWorker): void {
    this.posted.push(message);
  }
  terminate(): void {
    this.terminated = true;
  }
  send(data: unknown): void {
    this.dispatchEvent(new MessageEvent("message", { data }));
  }
}

const success = { status: "success", result: 1, reports: [], logs: [], durationMs: 1 };

describe("SandboxRunner session requests", () => {
  it("settles a make only on its own opened, a cell with its snapshot, and asks a cell to stop by its nonce", async () => {
    const worker = new FakeWorker();
    const runner = new SandboxRunner(() => worker as unknown as Worker, false);
    const made = runner.make({ type: "open", session: "1", settings: SETTINGS });
    const open = worker.posted[1];
    if (open?.type !== "open") throw new Error("expected an open");
    expect(open).toEqual({ type: "open", nonce: open.nonce, session: "1", settings: SETTINGS });
    // A result, or an opened of another nonce, does not answer an open.
    worker.send({ type: "result", nonce: open.nonce, result: toWire(success), workerMs: 1 });
    worker.send({ type: "opened", nonce: NONCE });
    expect(runner.ignored).toBe(2);
    worker.send({ type: "opened", nonce: open.nonce });
    expect(await made).toEqual({ kind: "opened" });

    const { outcome: cell, snapshot: snapshotOfCell } = runner.cell("1", { source: "x" });
    const request = worker.posted[2];
    if (request?.type !== "cell") throw new Error("expected a cell");
    expect(request.cell).toEqual({ source: "x" });
    let stopping = false;
    void runner.stopCell().then(() => (stopping = true));
    expect(worker.posted[3]).toEqual({ type: "stop-cell", nonce: request.nonce });
    // An opened does not answer a cell; stopping does not settle it.
    worker.send({ type: "opened", nonce: request.nonce });
    worker.send({ type: "stopping", nonce: request.nonce });
    await Promise.resolve();
    expect({ stopping, running: runner.running, ignored: runner.ignored }).toEqual({
      stopping: true,
      running: true,
      ignored: 3,
    });
    worker.send({ type: "result", nonce: request.nonce, result: toWire(success), workerMs: 1 });
    const outcome = await cell;
    if (outcome.kind !== "result") throw new Error("expected a result");
    expect(outcome.result.result).toBe(1);
    // The snapshot follows the result, whatever request is going on by then; a second one is stale.
    const next = runner.make({ type: "fork", session: "2", from: "1" });
    const snapshot = new Uint8Array([9, 8, 7]);
    worker.send({ type: "snapshot", nonce: request.nonce, snapshot });
    expect(await snapshotOfCell).toEqual(snapshot);
    worker.send({ type: "snapshot", nonce: request.nonce, snapshot });
    expect(runner.ignored).toBe(4);
    worker.send({ type: "opened", nonce: (worker.posted[4] as { nonce: string }).nonce });
    expect(await next).toEqual({ kind: "opened" });

    runner.close("1");
    expect(worker.posted[5]).toMatchObject({ type: "close", session: "1" });
  });

  it("a refused cell and a worker ended by Stop leave no snapshot awaited", async () => {
    const workers: FakeWorker[] = [];
    const runner = new SandboxRunner(() => {
      const worker = new FakeWorker();
      workers.push(worker);
      return worker as unknown as Worker;
    }, false);
    const first = workers[0] as FakeWorker;
    const refused = runner.cell("1", { source: "x" });
    first.send({ type: "rejected", nonce: first.posted[1]?.nonce, name: "ReferenceError", message: "no session 1" });
    expect(await refused.outcome).toEqual({ kind: "rejected", name: "ReferenceError", message: "no session 1" });
    expect(await refused.snapshot).toBe(undefined);
    const stopped = runner.cell("1", { source: "for (;;) {}" });
    runner.stop();
    expect((await stopped.outcome).kind).toBe("result");
    expect(await stopped.snapshot).toBe(undefined);
    expect(first.terminated).toBe(true);
  });
});

/** The page's session mode over the real sandbox worker. */
function branchesOnWorker(softStopMs?: number): SessionBranches {
  const runner = new SandboxRunner(
    () => new Worker(new URL("../../web/sandbox.worker.ts", import.meta.url), { type: "module" }),
    false,
  );
  return new SessionBranches(runner, softStopMs);
}

async function cell(
  branches: SessionBranches,
  source: string,
  settings: SessionSettings = SETTINGS,
): Promise<CodeExecutionResult> {
  const outcome = await branches.run({ settings, cell: { source, language: "javascript" } });
  if (outcome.kind !== "result") throw new Error(`refused: ${outcome.name}: ${outcome.message}`);
  return outcome.result;
}

/** A cell's status and result, or its error's name and message. */
async function value(branches: SessionBranches, source: string): Promise<unknown> {
  const { status, result, error } = await cell(branches, source);
  return status === "success" ? result : { status, name: error?.name, message: error?.message };
}

const NOT_DEFINED = { status: "error", name: "ReferenceError", message: "'x' is not defined" };

describe("the sandbox worker's sessions", () => {
  it("cells keep state, a fork is independent of its parent, and Reset forgets", async () => {
    const branches = branchesOnWorker();
    expect(await value(branches, "let x = 41")).toBe(undefined);
    expect(await value(branches, "x + 1")).toBe(42);
    const main = branches.current;

    expect(await branches.fork(SETTINGS)).toBe(undefined);
    // The fork was answered after main's last snapshot came, and starts from it.
    expect(main.snapshot).toBeInstanceOf(Uint8Array);
    expect(branches.current.snapshot).toBe(main.snapshot);
    expect(branches.branches.map((b) => b.name)).toEqual(["main", "fork 1"]);
    expect(branches.selected).toBe(1);
    expect(await value(branches, "x = 0")).toBe(0);
    branches.selected = 0;
    expect(await value(branches, "x")).toBe(41);
    branches.selected = 1;
    expect(await value(branches, "x")).toBe(0);

    // The transcripts: main's cells; the fork's are main's two, the mark, then its own.
    expect(main.transcript.map((e) => (e.kind === "cell" ? e.source : `fork of ${e.from}`))).toEqual([
      "let x = 41",
      "x + 1",
      "x",
    ]);
    expect(branches.current.transcript.map((e) => (e.kind === "cell" ? e.source : `fork of ${e.from}`))).toEqual([
      "let x = 41",
      "x + 1",
      "fork of main",
      "x = 0",
      "x",
    ]);

    branches.selected = 0;
    branches.reset();
    expect(branches.current).toMatchObject({ name: "main", id: undefined, snapshot: undefined, transcript: [] });
    expect(await value(branches, "x")).toEqual(NOT_DEFINED);
    branches.selected = 1;
    expect(await value(branches, "x")).toBe(0);
  });

  it("a session is made with the settings of its first Run; later settings wait for a Reset", async () => {
    const branches = branchesOnWorker();
    const settings: SessionSettings = {
      globals: { input: { kind: "json", value: [1, 2, 3] }, twice: { kind: "function", source: "(n) => n * 2" } },
      imports: {},
      webApis: true,
      modules: { "./m.js": "export const m = 7;" },
    };
    expect(
      await cell(branches, "var { m } = await import('./m.js');\ntwice(m) + input.length", settings),
    ).toMatchObject({
      status: "success",
      result: 17,
    });
    expect(await value(branches, "typeof TextEncoder")).toBe("function");
    // Other settings at a later Run do not change the session made.
    expect((await cell(branches, "typeof input", { ...SETTINGS, webApis: false })).result).toBe("object");
    branches.reset();
    expect((await cell(branches, "typeof input + typeof TextEncoder", SETTINGS)).result).toBe("undefinedundefined");
  });

  it("Stop ends a waiting cell in the worker, its effects kept; a cell holding the thread ends the worker, and every branch comes back as before the cell", async () => {
    const branches = branchesOnWorker(5_000);
    const settings: SessionSettings = {
      ...SETTINGS,
      globals: { never: { kind: "function", source: "() => new Promise(() => {})" } },
    };
    expect((await cell(branches, "var x = 41", settings)).status).toBe("success");
    expect(await branches.fork(settings)).toBe(undefined);
    expect(await value(branches, "x = 0")).toBe(0);
    branches.selected = 0;

    // Waiting on a host function: the worker ends the cell; what it did stays.
    const waiting = cell(branches, "x = 5; await never();");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await branches.stop()).toEqual({ how: "soft", lost: [] });
    expect(await waiting).toMatchObject({ status: "terminated", error: { message: "Stopped by the user" } });
    expect(await value(branches, "x")).toBe(5);

    // Holding the thread: the worker is ended; main comes back as its last cell left it, the fork as its own.
    const spinning = cell(branches, "x = 6; for (;;) {}");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await branches.stop()).toEqual({ how: "hard", lost: [] });
    expect(await spinning).toMatchObject({ status: "terminated", error: { message: "Stopped by the user" } });
    const last = branches.current.transcript.at(-1);
    expect(last?.kind === "cell" && last.rolledBack).toBe(true);
    expect(await value(branches, "x")).toBe(5);
    expect(await value(branches, "typeof never")).toBe("function");
    branches.selected = 1;
    expect(await value(branches, "x")).toBe(0);
  });
});
