/**
 * A loopback HTTP server (port 0) for the fetch tests: it records every request that reaches it and serves the
 * routes the tests need: echoes, redirects, large, declared and compressed bodies, many headers, and requests that never
 * answer.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync, constants as zlibConstants } from "node:zlib";

/** A request as the server received it. */
export interface Received {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  /** The headers as they came, names and values in turn. */
  raw: string[];
  body: string;
}

export interface LoopbackServer {
  origin: string;
  /** Every request that reached the server, in order. */
  received: Received[];
  /** Resolves when a request for `path` has arrived. */
  arrived(path: string): Promise<void>;
  /** Resolves when the client dropped a request for `path` before its response ended. */
  dropped(path: string): Promise<void>;
  /** Connections the server has accepted. */
  connections(): number;
  close(): Promise<void>;
}

type Route = (request: Received, res: ServerResponse) => void;

const CHUNK = 64 * 1024;

const routes: [RegExp, (match: RegExpExecArray) => Route][] = [
  [/^\/echo/, () => (request, res) => json(res, request)],
  [
    /^\/redirect\/(\d+)\?to=(.*)$/,
    (m) => (_, res) => {
      res.writeHead(Number(m[1]), { location: decodeURIComponent(m[2] as string) });
      res.end();
    },
  ],
  [
    /^\/loop$/,
    () => (_, res) => {
      res.writeHead(302, { location: "/loop" });
      res.end();
    },
  ],
  [
    /^\/bytes\/(\d+)/,
    (m) => (_, res) => {
      let left = Number(m[1]);
      const write = () => {
        while (left > 0 && !res.destroyed) {
          const size = Math.min(CHUNK, left);
          left -= size;
          if (!res.write(Buffer.alloc(size, 120))) return void res.once("drain", write);
        }
        res.end();
      };
      write();
    },
  ],
  [
    /^\/declared\/(\d+)$/,
    (m) => (_, res) => {
      res.writeHead(200, { "content-length": m[1] });
      res.end(Buffer.alloc(Number(m[1]), 120));
    },
  ],
  [
    /^\/headers\/(\d+)\/(\d+)$/,
    (m) => (_, res) => {
      for (let i = 0; i < Number(m[1]); i++) res.setHeader(`x-h-${i}`, "v".repeat(Number(m[2])));
      res.end("ok");
    },
  ],
  [
    /^\/cookies$/,
    () => (_, res) => {
      res.setHeader("set-cookie", ["a=1; Path=/", "b=2"]);
      res.end();
    },
  ],
  [
    /^\/(gzip|br)\/(\d+)$/,
    (m) => (_, res) => {
      res.writeHead(200, { "content-encoding": m[1] as string, "content-type": "text/plain" });
      res.end(compressed(m[1] as "gzip" | "br", Number(m[2])));
    },
  ],
  [
    // A body of text encoded by each coding listed in turn ("br" brotli, "deflate" zlib's, "raw" deflate without
    // zlib's wrapper, "gzip" and "x-gzip"; any other name left as it is), labelled with the list as given.
    /^\/coded\?(.*)$/,
    (m) => (_, res) => {
      const label = decodeURIComponent(m[1] as string);
      let body: Buffer = Buffer.from("coded ".repeat(50));
      for (const coding of label.split(",").map((name) => name.trim())) body = encoded(coding, body);
      res.writeHead(200, { "content-encoding": label.replaceAll("raw", "deflate") });
      res.end(body);
    },
  ],
  [
    // A status with its own reason phrase, repeated headers and cookies, and the request's raw headers as its body.
    /^\/reason\/(\d+)\/(.*)$/,
    (m) => (request, res) => {
      const headers: [string, string][] = [
        ["x-b", "2"],
        ["x-a", " 1 "],
        ["x-b", "3"],
        ["set-cookie", "c=1"],
        ["set-cookie", "d=2"],
      ];
      res.writeHead(Number(m[1]), decodeURIComponent(m[2] as string), headers);
      res.end(JSON.stringify([request.method, request.raw]));
    },
  ],
  [
    // A body of "x" in chunks of the chunked coding of one byte each, written at once.
    /^\/pieces\/(\d+)$/,
    (m) => (_, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.cork();
      for (let i = 0; i < Number(m[1]); i++) res.write("x");
      res.uncork();
      res.end();
    },
  ],
  [
    // Its head and the first 10 of its 100 bytes, then nothing.
    /^\/stall/,
    () => (_, res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write(Buffer.alloc(10, 120));
    },
  ],
  [/^\/hang/, () => () => {}],
];

function encoded(coding: string, body: Buffer): Buffer {
  if (coding === "gzip" || coding === "x-gzip") return gzipSync(body);
  if (coding === "deflate") return deflateSync(body);
  if (coding === "raw") return deflateRawSync(body);
  if (coding === "br") return brotliCompressSync(body);
  return body;
}

const bombs = new Map<string, Buffer>();
/** `bytes` of "x", compressed: 64 MiB of it is some tens of kilobytes on the wire. */
function compressed(coding: "gzip" | "br", bytes: number): Buffer {
  const key = `${coding}/${bytes}`;
  let body = bombs.get(key);
  if (body === undefined) {
    const plain = Buffer.alloc(bytes, 120);
    body =
      coding === "gzip"
        ? gzipSync(plain)
        : brotliCompressSync(plain, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 1 } });
    bombs.set(key, body);
  }
  return body;
}

function json(res: ServerResponse, value: unknown): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}

export async function startServer(): Promise<LoopbackServer> {
  const received: Received[] = [];
  const waiting: { path: string; event: "arrived" | "dropped"; resolve(): void }[] = [];
  const notify = (path: string, event: "arrived" | "dropped") => {
    for (const waiter of waiting.filter((w) => w.path === path && w.event === event)) {
      waiting.splice(waiting.indexOf(waiter), 1);
      waiter.resolve();
    }
  };
  const seen = new Map<string, Set<string>>();
  const mark = (path: string, event: "arrived" | "dropped") => {
    seen.set(path, (seen.get(path) ?? new Set()).add(event));
    notify(path, event);
  };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const request = {
      method: req.method ?? "",
      path: req.url ?? "",
      headers: req.headers,
      raw: req.rawHeaders,
      body: Buffer.concat(chunks).toString(),
    };
    received.push(request);
    res.on("close", () => {
      if (!res.writableFinished) mark(request.path, "dropped");
    });
    mark(request.path, "arrived");
    for (const [pattern, route] of routes) {
      const match = pattern.exec(request.path);
      if (match !== null) return route(match)(request, res);
    }
    res.writeHead(404);
    res.end();
  });
  // Connections kept a minute between requests (not Node's 5 s), so a loaded machine never closes one between runs.
  server.keepAliveTimeout = 60_000;
  let connections = 0;
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  const when = (path: string, event: "arrived" | "dropped") =>
    seen.get(path)?.has(event)
      ? Promise.resolve()
      : new Promise<void>((resolve) => waiting.push({ path, event, resolve }));
  return {
    origin: `http://127.0.0.1:${port}`,
    received,
    arrived: (path) => when(path, "arrived"),
    dropped: (path) => when(path, "dropped"),
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
