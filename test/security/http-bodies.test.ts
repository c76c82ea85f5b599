/**
 * Request bodies against `runcode/host`'s `POST /processes` (SECURITY.md, "The HTTP API"): the size limit holds
 * while the body arrives, not after it was read whole, and only JSON is taken. Each body is a stream the test
 * controls (`counting-body.ts`), which counts the bytes the host pulled from it and whether the host cancelled it.
 */
import { createServer } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { describe, expect, it } from "vitest";
import { instantiate } from "../../src/environment/index.js";
import { createHost } from "../../src/host/index.js";
import { inThread, wasm } from "../environment/helpers.js";
import { CHUNK_BYTES, countingBody } from "./counting-body.js";

const MiB = 1024 * 1024;
const JSON_TYPE = { "content-type": "application/json" };
const CODE = '{"code":"1"}';

async function host() {
  return createHost({
    environment: { module: instantiate({ wasm: await wasm(), createSandbox: inThread, concurrency: 1 }) },
  });
}

type Host = Awaited<ReturnType<typeof host>>;

const post = (h: Host, body: BodyInit | null, headers: Record<string, string> = JSON_TYPE) =>
  h.app.fetch(
    new Request("http://host/processes", { method: "POST", body, headers, duplex: "half" } as RequestInit & {
      duplex: "half";
    }),
  );

/** Status and error code exactly, and a message. */
async function refused(response: Response): Promise<{ status: number; code: string | undefined }> {
  const body = (await response.json()) as { error?: { code?: string; message?: string } };
  expect(typeof body.error?.message).toBe("string");
  return { status: response.status, code: body.error?.code };
}

async function pids(h: Host): Promise<number[]> {
  const response = await h.app.fetch(new Request("http://host/processes"));
  return ((await response.json()) as { processes: { pid: number }[] }).processes.map((p) => p.pid);
}

/** Runs `use` with `h`'s app served by a Node HTTP server on a loopback port, closed after. */
async function overNode(h: Host, use: (port: number) => Promise<void>): Promise<void> {
  const server = createServer(getRequestListener(h.app.fetch));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    await use((server.address() as AddressInfo).port);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe("POST /processes: the body limit holds while the body arrives", () => {
  it("a 48 MiB streamed body is cut off just past 1 MiB: 413, the stream cancelled, nothing stored", async () => {
    const h = await host();
    const { stream, count } = countingBody(48 * MiB, CODE);
    expect(await refused(await post(h, stream))).toEqual({ status: 413, code: "payload_too_large" });
    // Read whole before the fix: 48 MiB. Now the limit and the chunk that passed it, at most.
    expect(count.pulled).toBeGreaterThan(MiB);
    expect(count.pulled).toBeLessThanOrEqual(MiB + CHUNK_BYTES);
    expect(count.cancelled).toBe(true);
    expect(await pids(h)).toEqual([]);
  });

  it("a declared content-length over the limit is refused before a byte is read", async () => {
    const h = await host();
    const { stream, count } = countingBody(48 * MiB, CODE);
    const response = await post(h, stream, { ...JSON_TYPE, "content-length": String(48 * MiB) });
    expect(await refused(response)).toEqual({ status: 413, code: "payload_too_large" });
    expect(count.pulled).toBe(0);
    expect(await pids(h)).toEqual([]);
  });

  it("takes a streamed body of exactly 1 MiB and refuses 1 MiB + 1, whatever the chunks", async () => {
    const h = await host();
    const exact = countingBody(MiB, CODE);
    const created = await post(h, exact.stream);
    expect(created.status).toBe(201);
    expect(exact.count).toEqual({ pulled: MiB, cancelled: false });
    const over = countingBody(MiB + 1, CODE);
    expect(await refused(await post(h, over.stream))).toEqual({ status: 413, code: "payload_too_large" });
    expect(over.count.pulled).toBe(MiB + 1);
    expect((await pids(h)).map((pid) => pid % 2 ** 32)).toEqual([1]);
  });

  it("a declared length within the limit is read in one step, and a body longer than it declared is still refused", async () => {
    const h = await host();
    const exact = `{"code":"1"}${" ".repeat(MiB - CODE.length)}`;
    expect((await post(h, exact, { ...JSON_TYPE, "content-length": String(MiB) })).status).toBe(201);
    // Only a request made in-process can say less than it sends (a server's HTTP parser ends the body where it said).
    const longer = await post(h, `${exact} `, { ...JSON_TYPE, "content-length": String(CODE.length) });
    expect(await refused(longer)).toEqual({ status: 413, code: "payload_too_large" });
    // A transfer coding beside a declared length: counted while it streams, as a body of undeclared length is.
    const { stream, count } = countingBody(48 * MiB, CODE);
    const coded = await post(h, stream, { ...JSON_TYPE, "content-length": "12", "transfer-encoding": "chunked" });
    expect(await refused(coded)).toEqual({ status: 413, code: "payload_too_large" });
    expect(count.pulled).toBeLessThanOrEqual(MiB + CHUNK_BYTES);
    expect(count.cancelled).toBe(true);
    expect((await pids(h)).length).toBe(1);
  });

  it("over a Node HTTP server: a declared body is taken whole, one over the limit refused, a chunked one cut off", async () => {
    const h = await host();
    await overNode(h, async (port) => {
      const url = `http://127.0.0.1:${port}/processes`;
      const send = (body: BodyInit) =>
        fetch(url, { method: "POST", headers: JSON_TYPE, body, duplex: "half" } as RequestInit & { duplex: "half" });
      const created = (await (await send('{"code":"// é😀"}')).json()) as { pid: number };
      const code = await h.app.fetch(new Request(`http://host/processes/${created.pid}/code`));
      expect(await code.text()).toBe("// é😀");
      expect((await send(`${CODE}${" ".repeat(MiB - CODE.length)}`)).status).toBe(201);
      expect(await refused(await send(`${CODE}${" ".repeat(MiB + 1 - CODE.length)}`))).toEqual({
        status: 413,
        code: "payload_too_large",
      });
      const { stream, count } = countingBody(48 * MiB, CODE);
      expect(await refused(await send(stream))).toEqual({ status: 413, code: "payload_too_large" });
      expect(count.pulled).toBeLessThan(48 * MiB);
      expect((await pids(h)).length).toBe(2);
    });
  });

  it("a body in chunks of one byte is cut off after as many chunks as the limit holds at 1 KiB: 413, nothing stored", async () => {
    const h = await host();
    // 200,000 bytes, well within 1 MiB, but each a chunk: before, every chunk was read and kept (a 1 MiB body of them
    // held 234 MB of heap and 3.7 s of the event loop), and the process was created.
    const { stream, count } = countingBody(200_000, CODE, 1);
    const response = await post(h, stream);
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({
      error: {
        code: "payload_too_large",
        message:
          "The body came in more than 1024 chunks: send it with a Content-Length, or in chunks of 1024 bytes or more",
      },
    });
    expect(count).toEqual({ pulled: 1025, cancelled: true });
    // Chunks of 1 KiB are taken up to the limit.
    const kibs = countingBody(MiB, CODE, 1024);
    expect((await post(h, kibs.stream)).status).toBe(201);
    expect((await pids(h)).length).toBe(1);
  });

  it("over a Node HTTP server, a body in one-byte chunks of the chunked coding is refused after 1,024 of them", async () => {
    const h = await host();
    await overNode(h, async (port) => {
      const body = `${CODE}${" ".repeat(100_000)}`;
      const chunks = [...body].map((c) => `1\r\n${c}\r\n`).join("");
      const head = "POST /processes HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json";
      const request = `${head}\r\ntransfer-encoding: chunked\r\n\r\n${chunks}0\r\n\r\n`;
      const answer = await new Promise<string>((resolve) => {
        let text = "";
        const socket = connect(port, "127.0.0.1", () => socket.end(request));
        socket.on("data", (data) => {
          text += data.toString();
        });
        // The server may close the connection while the rest of the request is on its way.
        socket.on("error", () => {});
        socket.on("close", () => resolve(text));
      });
      expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 413 Payload Too Large");
      expect(answer).toContain('"code":"payload_too_large"');
      expect(await pids(h)).toEqual([]);
    });
  });

  it("a body nesting past 4,096 levels is refused before it is parsed: 400 invalid_json, nothing stored", async () => {
    const h = await host();
    // Before: parsed (half a million levels: 110-190 ms of the platform's JSON.parse, 300-500 ms a request in all),
    // then refused for its unknown field.
    const levels = 500_000;
    const deep = `{"code":"1","x":${"[".repeat(levels)}${"]".repeat(levels)}}`;
    expect(deep.length).toBeLessThanOrEqual(MiB);
    const response = await post(h, deep);
    expect([response.status, await response.json()]).toEqual([
      400,
      { error: { code: "invalid_json", message: "The body nests deeper than 4096 levels of arrays and objects" } },
    ]);
    // Brackets in strings are text.
    const created = await post(h, JSON.stringify({ code: `// ${"[".repeat(10_000)}` }));
    expect(created.status).toBe(201);
    expect((await pids(h)).length).toBe(1);
  });

  it("a character split across chunks arrives whole; bytes that are not UTF-8 stay invalid_json", async () => {
    const h = await host();
    const bytes = new TextEncoder().encode('{"code":"// é😀"}');
    const split = bytes.indexOf(0xc3) + 1; // between the two bytes of "é"
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, split));
        controller.enqueue(bytes.slice(split, split + 3)); // and inside the emoji
        controller.enqueue(bytes.slice(split + 3));
        controller.close();
      },
    });
    const created = (await (await post(h, stream)).json()) as { pid: number };
    const code = await h.app.fetch(new Request(`http://host/processes/${created.pid}/code`));
    expect(await code.text()).toBe("// é😀");
    const notUtf8 = new Uint8Array([...new TextEncoder().encode('{"code":"'), 0xff, 0x22, 0x7d]);
    expect(await refused(await post(h, notUtf8))).toEqual({ status: 400, code: "invalid_json" });
  });
});

describe("POST /processes takes only application/json", () => {
  const body = JSON.stringify({ code: "export default 1" });
  const wrong: [string, Record<string, string>, BodyInit][] = [
    ["text/plain", { "content-type": "text/plain" }, body],
    ["text/plain;charset=UTF-8", { "content-type": "text/plain;charset=UTF-8" }, body],
    ["form-urlencoded", { "content-type": "application/x-www-form-urlencoded" }, "code=export+default+1"],
    ["multipart", { "content-type": "multipart/form-data; boundary=x" }, body],
    ["none", {}, new TextEncoder().encode(body)],
    ["application/jsonp", { "content-type": "application/jsonp" }, body],
    ["application/json-patch+json", { "content-type": "application/json-patch+json" }, body],
  ];

  it("answers 415 unsupported_media_type otherwise, before reading the body or spending a pid", async () => {
    const h = await host();
    for (const [name, headers, payload] of wrong) {
      expect(await refused(await post(h, payload, headers)), name).toEqual({
        status: 415,
        code: "unsupported_media_type",
      });
    }
    const { stream, count } = countingBody(48 * MiB, CODE);
    const typed = await post(h, stream, { "content-type": "text/plain" });
    expect(await refused(typed)).toEqual({ status: 415, code: "unsupported_media_type" });
    expect(count.pulled).toBe(0);
    expect(await pids(h)).toEqual([]);
    for (const type of ["application/json", "application/json; charset=utf-8", "Application/JSON ;charset=UTF-8"]) {
      expect((await post(h, body, { "content-type": type })).status, type).toBe(201);
    }
    // The refusals spent no pid: the three creations have the tenant's first three.
    const spent = await pids(h);
    expect(spent.map((pid) => pid - (spent[0] as number))).toEqual([0, 1, 2]);
    expect((spent[0] as number) % 2 ** 32).toBe(1);
  });
});
