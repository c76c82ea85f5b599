import { describe, expect, it } from "vitest";
import { toWire } from "../../src/values/wire.js";
import { isHello, isReady, isReport, isResult, isRun, type ToWorker } from "../../web/messages.js";
import { InputError, toEdgeBody, toPayload, unfence } from "../../web/payload.js";
import { SandboxRunner } from "../../web/runner.js";
import { decodeShare, defaultSession, encodeShare, parseSession } from "../../web/session.js";

const NONCE = "0123456789abcdef0123";

describe("messages: guards", () => {
  it("accept well-formed messages of the expected nonce only", () => {
    expect(isHello({ type: "hello", nonce: NONCE })).toBe(true);
    const payload = { source: "", options: {}, globals: {}, imports: {}, webApis: false };
    expect(isRun({ type: "run", nonce: NONCE, payload })).toBe(true);
    expect(isReady({ type: "ready", nonce: NONCE, warmupMs: 1 }, NONCE)).toBe(true);
    expect(isReady({ type: "ready", nonce: NONCE, warmupMs: 1 }, `${NONCE}x`)).toBe(false);
    expect(isReport({ type: "report", nonce: NONCE, value: 1 }, NONCE)).toBe(true);
    expect(isResult({ type: "result", nonce: NONCE, result: {}, workerMs: 1 }, NONCE)).toBe(true);
  });

  it.each([
    null,
    "result",
    [],
    { type: "result" },
    { type: "result", nonce: "short", result: {}, workerMs: 1 },
    { type: "result", nonce: NONCE, workerMs: 1 },
    { type: "result", nonce: NONCE, result: {}, workerMs: "1" },
    { type: "Result", nonce: NONCE, result: {}, workerMs: 1 },
    { type: "run", nonce: NONCE, payload: { source: 1, options: {}, globals: {}, imports: {}, webApis: false } },
    { type: "run", nonce: NONCE, payload: { source: "", options: {}, globals: {}, imports: {}, webApis: "yes" } },
  ])("refuse %j", (data) => {
    expect(isResult(data, NONCE)).toBe(false);
    expect(isRun(data)).toBe(false);
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

const result = { status: "success", result: new Map([[1n, "x"]]), reports: [], logs: [], durationMs: 1 };

describe("SandboxRunner", () => {
  it("ignores forged and stale messages and settles with the real result", async () => {
    const workers: FakeWorker[] = [];
    const runner = new SandboxRunner(() => {
      const worker = new FakeWorker();
      workers.push(worker);
      return worker as unknown as Worker;
    });
    const worker = workers[0] as FakeWorker;
    const hello = worker.posted[0];
    expect(hello?.type).toBe("hello");
    worker.send({ type: "ready", nonce: hello?.nonce, warmupMs: 5 });
    expect(await runner.ready).toBe(5);

    const reports: unknown[] = [];
    const run = runner.run({ source: "x", options: {}, globals: {}, imports: {}, webApis: false }, (v) =>
      reports.push(v),
    );
    const request = worker.posted[1];
    if (request?.type !== "run") throw new Error("expected a run message");
    const forged = { status: "success", result: "FORGED", reports: [], logs: [], durationMs: 0 };
    worker.send({ type: "result", nonce: "f".repeat(36), result: toWire(forged), workerMs: 0 });
    worker.send({ type: "report", nonce: "f".repeat(36), value: "forged report" });
    worker.send({ type: "result", nonce: request.nonce });
    worker.send({ type: "report", nonce: request.nonce, value: toWire(new Set([1])) });
    worker.send({ type: "result", nonce: request.nonce, result: toWire(result), workerMs: 2 });
    const outcome = await run;
    expect(outcome.kind).toBe("result");
    if (outcome.kind !== "result") return;
    expect(outcome.result.result).toEqual(new Map([[1n, "x"]]));
    expect(reports).toEqual([new Set([1])]);
    expect(runner.ignored).toBe(3);
    // After settling, the real nonce is stale too.
    worker.send({ type: "result", nonce: request.nonce, result: toWire(result), workerMs: 2 });
    expect(runner.ignored).toBe(4);
  });

  it("stop terminates the worker, settles as terminated with the reports so far, and starts a fresh worker", async () => {
    const workers: FakeWorker[] = [];
    const runner = new SandboxRunner(() => {
      const worker = new FakeWorker();
      workers.push(worker);
      return worker as unknown as Worker;
    });
    const first = workers[0] as FakeWorker;
    const run = runner.run({ source: "while(true){}", options: {}, globals: {}, imports: {}, webApis: false });
    const request = first.posted[1];
    first.send({ type: "report", nonce: request?.nonce, value: 7 });
    runner.stop("enough");
    const outcome = await run;
    expect(first.terminated).toBe(true);
    expect(workers.length).toBe(2);
    expect(runner.running).toBe(false);
    if (outcome.kind !== "result") throw new Error("expected a result");
    expect(outcome.result.status).toBe("terminated");
    expect(outcome.result.error).toEqual({ name: "TerminatedError", message: "enough" });
    expect(outcome.result.reports).toEqual([7]);
    // A late message of the old run is ignored; the new worker takes the next run.
    first.send({ type: "result", nonce: request?.nonce, result: toWire(result), workerMs: 1 });
    expect(runner.ignored).toBe(1);
    const next = runner.run({ source: "1", options: {}, globals: {}, imports: {}, webApis: false });
    const second = workers[1] as FakeWorker;
    const again = second.posted[1];
    second.send({ type: "result", nonce: again?.nonce, result: toWire(result), workerMs: 1 });
    expect((await next).kind).toBe("result");
  });
});

describe("SandboxRunner spare worker", () => {
  it("keeps a warm spare and promotes it on Stop, so the next run does not wait for a new worker", async () => {
    const workers: FakeWorker[] = [];
    const runner = new SandboxRunner(() => {
      const worker = new FakeWorker();
      workers.push(worker);
      return worker as unknown as Worker;
    });
    const answerReady = (worker: FakeWorker) =>
      worker.send({ type: "ready", nonce: worker.posted[0]?.nonce, warmupMs: 1 });
    answerReady(workers[0] as FakeWorker);
    await runner.ready;
    await Promise.resolve();
    expect(workers.length).toBe(2);
    const spare = workers[1] as FakeWorker;
    answerReady(spare);
    // The spare's messages never count as run messages while it is not current.
    spare.send({ type: "result", nonce: "x".repeat(36), result: null, workerMs: 0 });
    expect(runner.ignored).toBe(1);

    const run = runner.run({ source: "while(true){}", options: {}, globals: {}, imports: {}, webApis: false });
    runner.stop();
    expect((await run).kind).toBe("result");
    expect((workers[0] as FakeWorker).terminated).toBe(true);
    expect(await runner.ready).toBe(1);
    const next = runner.run({ source: "1", options: {}, globals: {}, imports: {}, webApis: false });
    const request = spare.posted[1];
    expect(request?.type).toBe("run");
    spare.send({ type: "result", nonce: request?.nonce, result: toWire(result), workerMs: 1 });
    expect((await next).kind).toBe("result");
    await Promise.resolve();
    expect(workers.length).toBe(3);
  });
});

describe("payload and session", () => {
  it("turns a session into worker options and an edge body", () => {
    const session = defaultSession();
    session.files.push({ name: "./m.ts", source: "export const m = 1" });
    session.executeFn = "f";
    session.executeArgs = '[1, {"a": 2}]';
    session.memoryLimitBytes = "16_777_216";
    session.filename = "main.ts";
    session.globals.push({ specifier: "", name: "greet", kind: "function", text: "(n) => n" });
    session.imports.push({ specifier: "fs", name: "read", kind: "function", text: "async () => ''" });
    const payload = toPayload(session);
    expect(payload.options).toEqual({
      language: "typescript",
      execute: { fn: "f", args: [1, { a: 2 }] },
      modules: { "./m.ts": "export const m = 1" },
      filename: "main.ts",
      memoryLimitBytes: 16_777_216,
    });
    expect(payload.globals).toEqual({
      input: { kind: "json", value: [1, 2, 3] },
      greet: { kind: "function", source: "(n) => n" },
    });
    const { body, dropped } = toEdgeBody(payload);
    expect(body).toEqual({ source: payload.source, options: { ...payload.options, globals: { input: [1, 2, 3] } } });
    expect(dropped).toEqual(["global greet (a function)", "import fs.read"]);
    expect(payload.webApis).toBe(false);
    session.webApis = true;
    expect(toPayload(session).webApis).toBe(true);
    expect(toEdgeBody(toPayload(session)).dropped).toEqual([
      "global greet (a function)",
      "import fs.read",
      "webApis (the edge host's RUNCODE_WEB_APIS decides)",
    ]);
  });

  it("runs the entry as a script unless the user names a call", () => {
    const session = defaultSession();
    expect(toPayload(session).options.execute).toBe("script");
    session.executeFn = " ";
    session.executeArgs = "";
    expect(toPayload(session).options.execute).toBe("script");
    session.executeFn = "default";
    session.executeArgs = "[1]";
    expect(toPayload(session).options.execute).toEqual({ fn: "default", args: [1] });
    session.executeFn = "main";
    session.executeArgs = "[]";
    expect(toPayload(session).options.execute).toEqual({ fn: "main", args: [] });
  });

  it("runs the code inside a pasted answer's first Markdown fence, on the editor's own lines", () => {
    const answer =
      "Here is the code:\n\n```ts\nconst a: number = 1;\nexport default a;\n```\n\nIt returns 1.\n```js\nx\n```";
    expect(unfence(answer)).toEqual({
      code: "\n\n\nconst a: number = 1;\nexport default a;\n\n\n\n\n\n",
      fenced: true,
    });
    // A longer opening fence is closed only by one as long; tildes work; an unclosed block runs to the end.
    expect(unfence("````\n```\ninner\n````").code).toBe("\n```\ninner\n");
    expect(unfence("~~~typescript\nexport default 2;\n~~~").code).toBe("\nexport default 2;\n");
    expect(unfence("```\nexport default 3;").code).toBe("\nexport default 3;");
    // No fence: the text as it is, template literals with backticks included.
    const plain = "const s = `a`;\nexport default s + '``';";
    expect(unfence(plain)).toEqual({ code: plain, fenced: false });
    const session = defaultSession();
    session.files[0] = { name: "main.ts", source: "Sure:\n```ts\nexport default input;\n```" };
    expect(toPayload(session).source).toBe("\n\nexport default input;\n");
  });

  it("names the field that does not parse", () => {
    const session = defaultSession();
    session.executeArgs = "{";
    expect(() => toPayload(session)).toThrow(InputError);
    session.executeArgs = "{}";
    expect(() => toPayload(session)).toThrow("execute args: must be a JSON array");
    session.executeArgs = "[]";
    session.memoryLimitBytes = "-5";
    expect(() => toPayload(session)).toThrow("memoryLimitBytes: a positive whole number");
  });

  it("share links round-trip and damaged ones are refused", async () => {
    const session = defaultSession();
    session.files[0] = { name: "main.ts", source: "export default '✓ é 😀'.repeat(100)" };
    const hash = await encodeShare(session);
    expect(hash).toMatch(/^#s=[A-Za-z0-9_-]+$/);
    expect(await decodeShare(hash)).toEqual(session);
    expect(await decodeShare("#s=AAAA")).toBe(undefined);
    expect(await decodeShare("#other")).toBe(undefined);
    expect(parseSession({ ...session, language: "python" })).toBe(undefined);
    const { webApis: _, ...saved } = session;
    expect(parseSession(saved)).toEqual({ ...session, webApis: false });
    expect(parseSession({ ...session, webApis: "yes" })).toBe(undefined);
  });
});

describe("the sandbox worker", () => {
  it("runs a script without a default export to success, its logs kept", async () => {
    const runner = new SandboxRunner(
      () => new Worker(new URL("../../web/sandbox.worker.ts", import.meta.url), { type: "module" }),
      false,
    );
    await runner.ready;
    const session = defaultSession();
    session.files[0] = { name: "main.ts", source: "const n: number = input.length;\nconsole.log('items', n);" };
    const outcome = await runner.run(toPayload(session));
    if (outcome.kind !== "result") throw new Error(`refused: ${outcome.message}`);
    const { status, result, error, logs } = outcome.result;
    expect({ status, hasResult: "result" in outcome.result, result, error }).toEqual({
      status: "success",
      hasResult: true,
      result: undefined,
      error: undefined,
    });
    expect(logs.map(({ level, args }) => ({ level, args }))).toEqual([{ level: "log", args: ["items", 3] }]);
  });
});
