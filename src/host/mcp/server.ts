/**
 * runcode as a Model Context Protocol server: one tool, `run_code`, that runs a module in a fresh sandbox and
 * answers the `CodeExecutionResult` (lossless wire JSON in `structuredContent`, a short text for the model), with
 * the host's services (the built-in `kv`, upstream tools) importable inside the run as bare specifiers. Built on the
 * official SDK's `McpServer`; the transports (stdio in Node, Streamable HTTP in the HTTP app) connect to it. Made per
 * connection or per request: it holds no state of its own.
 * @module
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker-provider.js";
import * as z from "zod/v4";
import { resultWire } from "../../core/result-wire.js";
import type { CodeExecution, RunCode } from "../../core/types.js";
import { declarationsOf } from "../../tools/declarations.js";
import type { ToolRegistry } from "../../tools/registry.js";
import type { JsonValue } from "../../values/json.js";
import { fromWire } from "../../values/wire.js";
import { codeTooLarge, MAX_CODE_BYTES } from "../code-size.js";
import { summarize } from "./summary.js";

export interface McpServerOptions {
  runCode: RunCode;
  /**
   * Whether `runCode`'s sandbox was made with the Web APIs (`createSandbox({ webApis: true })`): the tool's guide
   * tells the model which globals it may use. Default `false`.
   */
  webApis?: boolean;
  /**
   * Waits for room to run with this memory limit (`undefined`: the sandbox's default) and returns its release; throws to
   * refuse the call (the HTTP app's admission). Default: every call runs at once.
   */
  admit?: (memoryLimitBytes: number | undefined) => Promise<() => void>;
  /** Services every run may import by their ids (`import { get } from "kv"`). */
  tools?: ToolRegistry;
  /** Whose runs these are: the services act for this tenant (its own `kv` store). Default `anonymous`. */
  tenant?: string;
  /** The process environment's documentation (Markdown), served as a resource when given. */
  environmentDocs?: () => string | Promise<string>;
  /** A call's wall-clock budget when it names none. Default {@link DEFAULT_TIMEOUT_MS}. */
  defaultTimeoutMs?: number;
  /** The most a call may ask for (`timeoutMs`). Default {@link MAX_TIMEOUT_MS}. */
  maxTimeoutMs?: number;
  /** The most memory a call may ask for (`memoryLimitBytes`). Default {@link MAX_MEMORY_BYTES}. */
  maxMemoryBytes?: number;
  /** Longest `structuredContent`, in characters of JSON; past it a `memory` result says so. */
  maxAnswerChars?: number;
  /**
   * The origins `runCode`'s sandbox lets guest code fetch (its `fetch.allow`), for the guide to name. Default none: the
   * guide says there is no `fetch`.
   */
  fetchAllow?: readonly string[];
}

export const DEFAULT_TIMEOUT_MS = 10_000;
export const MAX_TIMEOUT_MS = 60_000;
export const MAX_MEMORY_BYTES = 64 * 1024 * 1024;

const WITHOUT_WEB_APIS = `- Only ECMAScript built-ins, \`structuredClone\` and \`queueMicrotask\` exist: no \`fetch\`, timers, \`require\`,
  \`process\`, file system, \`eval\` or \`new Function\`, unless a service below provides it.`;
/** The Web APIs, and `fetch` when the sandbox reaches `fetchAllow`. */
const withWebApis = (
  fetchAllow: readonly string[],
) => `- ECMAScript built-ins, \`structuredClone\`, \`queueMicrotask\` and these Web APIs exist: \`URL\`, \`URLSearchParams\`,
  \`TextEncoder\`, \`TextDecoder\` (UTF-8), \`atob\`, \`btoa\`, \`crypto.getRandomValues\`, \`crypto.randomUUID\`, \`setTimeout\`,
  \`setInterval\` (the run waits for pending timers), \`AbortController\`, \`AbortSignal\`, \`Event\`, \`EventTarget\`,
  \`DOMException\`, \`Headers\`, \`Request\`, \`Response\`. ${
    fetchAllow.length === 0
      ? "No `fetch`,"
      : `\`fetch(url, init?)\` reaches only ${fetchAllow.map((entry) => `\`${entry}\``).join(", ")}: any other URL, or a
  redirect to one, rejects with a TypeError; read a response whole (\`await res.json()\`, \`text()\`). No`
  } \`require\`, \`process\`, file system, \`eval\` or \`new Function\`, unless a service below provides it.`;

/** The tool description's guide: how to write code for this sandbox, in the words a model needs. */
function guide(maxMemoryBytes: number, declarations: string, webApis: boolean, fetchAllow: readonly string[]): string {
  return `Runs one JavaScript or TypeScript ES module in a fresh QuickJS sandbox and returns its result. Nothing
persists between calls except what you store through a bridged service.

How to write the code:
- It is an ES module. Return a value with \`export default <value>\`; it may be a Promise or an async function's
  result (top-level \`await\` works). Without a default export it runs as a script: the call succeeds with no result
  and its logs. To call an exported function instead, pass \`execute: { fn: "name", args: [...] }\`.
- TypeScript by default (types are erased, not checked; \`enum\` and \`namespace\` work); set \`language: "javascript"\`
  for plain JavaScript. Errors come back with the line and column of your source.
- \`console.log/info/warn/error/debug\` are captured as logs; \`report(value)\` records intermediate values in order.
- Values cross as structured clone: numbers (NaN, -0, Infinity), bigint, undefined, strings, plain objects, arrays
  (holes kept), Map, Set, Date, RegExp, Error, ArrayBuffer, typed arrays and DataView arrive exactly. Functions,
  symbols and class instances cannot be returned.
- \`globals\` puts JSON values (or wire-encoded ones, as in the result) in scope of your code as free identifiers
  (they are not properties of \`globalThis\`).
${webApis ? withWebApis(fetchAllow) : WITHOUT_WEB_APIS}
- Limits: memory ${Math.round(maxMemoryBytes / 1048576)} MiB at most (\`memoryLimitBytes\`), a time limit per call
  (\`timeoutMs\`); past them the status is \`memory\` or \`terminated\`.

The answer: \`status\` is success, error (an uncaught exception), link_error (a syntax error or an import that does
not resolve), memory or terminated; \`result\` on success; \`error\` with name, message, filename, line and column
otherwise; \`reports\`, \`logs\` and \`durationMs\` always.
${declarations === "" ? "" : `\nServices importable as modules (TypeScript declarations; each function returns a Promise and throws with the service's message when a call fails):\n\n\`\`\`ts\n${declarations}\`\`\`\n`}`;
}

/** `execute` with its arguments decoded from the wire encoding. */
function callOf(execute: { fn?: string | undefined; args?: unknown[] | undefined }): { fn?: string; args?: unknown[] } {
  return {
    ...(execute.fn === undefined ? {} : { fn: execute.fn }),
    ...(execute.args === undefined ? {} : { args: fromWire(execute.args as JsonValue) as unknown[] }),
  };
}

export function createMcpServer(options: McpServerOptions): McpServer {
  const {
    runCode,
    webApis = false,
    admit,
    tools,
    tenant,
    environmentDocs,
    defaultTimeoutMs = DEFAULT_TIMEOUT_MS,
    maxTimeoutMs = MAX_TIMEOUT_MS,
    maxMemoryBytes = MAX_MEMORY_BYTES,
    maxAnswerChars = maxMemoryBytes,
    fetchAllow = [],
  } = options;
  const server = new McpServer(
    { name: "runcode", version: "0.1.0" },
    // The SDK's default validator compiles schemas with `new Function`, which Workers refuse.
    { jsonSchemaValidator: new CfWorkerJsonSchemaValidator() },
  );
  const description = guide(
    maxMemoryBytes,
    tools === undefined ? "" : declarationsOf(tools.list()),
    webApis,
    fetchAllow,
  );

  server.registerTool(
    "run_code",
    {
      title: "Run JavaScript or TypeScript in a sandbox",
      description,
      inputSchema: {
        // Characters: a string of MAX_CODE_BYTES UTF-8 bytes has at most as many; the bytes are checked below.
        code: z.string().max(MAX_CODE_BYTES).describe(`The ES module to run, up to ${MAX_CODE_BYTES} bytes of UTF-8.`),
        language: z.enum(["typescript", "javascript"]).optional().describe("Default typescript."),
        globals: z.record(z.string(), z.unknown()).optional().describe("Values to define as globals."),
        execute: z
          .object({ fn: z.string().optional(), args: z.array(z.unknown()).optional() })
          .strict()
          .optional()
          .describe("Call this export (default: `default`) with these arguments."),
        memoryLimitBytes: z.number().int().positive().max(maxMemoryBytes).optional(),
        timeoutMs: z
          .number()
          .int()
          .positive()
          .max(maxTimeoutMs)
          .optional()
          .describe(`Wall-clock budget of the call, default ${defaultTimeoutMs}.`),
      },
      annotations: { readOnlyHint: false, openWorldHint: false },
    },
    async ({ code, language, globals, execute, memoryLimitBytes, timeoutMs = defaultTimeoutMs }, extra) => {
      let run: CodeExecution;
      let release = () => {};
      try {
        const tooLarge = codeTooLarge("code", [code]);
        if (tooLarge !== undefined) throw tooLarge;
        if (admit !== undefined) release = await admit(memoryLimitBytes);
        // Arguments and globals may use the wire encoding for what JSON cannot carry (bigint, Map, Date, ...).
        run = runCode(code, {
          ...(language === undefined ? {} : { language }),
          ...(globals === undefined ? {} : { globals: fromWire(globals as JsonValue) as Record<string, unknown> }),
          execute: execute === undefined ? "script" : callOf(execute),
          ...(memoryLimitBytes === undefined ? {} : { memoryLimitBytes }),
          ...(tools === undefined ? {} : { imports: tools.modules(tenant) }),
        });
      } catch (error) {
        release();
        return { isError: true, content: [{ type: "text", text: `run_code: ${(error as Error).message}` }] };
      }
      // A cancelled call, or a server closed with its request, stops the run.
      extra.signal.addEventListener("abort", () => run.terminate("The call was cancelled"), { once: true });
      const budget = setTimeout(() => run.terminate(`run_code's budget of ${timeoutMs} ms ran out`), timeoutMs);
      const result = await run;
      clearTimeout(budget);
      release();
      return {
        content: [{ type: "text", text: summarize(result) }],
        structuredContent: resultWire(result, maxAnswerChars) as Record<string, unknown>,
        isError: result.status !== "success",
      };
    },
  );

  server.registerResource(
    "run-code-guide",
    "runcode://docs/run-code",
    { title: "How to write code for run_code", mimeType: "text/markdown" },
    (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/markdown", text: description }] }),
  );
  if (environmentDocs !== undefined) {
    server.registerResource(
      "environment-docs",
      "runcode://docs/environment",
      { title: "The process environment (POST /processes)", mimeType: "text/markdown" },
      async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/markdown", text: await environmentDocs() }] }),
    );
  }
  return server;
}
