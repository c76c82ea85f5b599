/**
 * runcode as a Model Context Protocol server: one tool, `run_code`, that runs a module in a fresh sandbox and
 * answers the `CodeExecutionResult` (lossless wire JSON in `structuredContent`, a short text for the model), with
 * the host's services (the built-in `kv`, upstream tools) importable inside the run as bare specifiers. While a call
 * runs, its console output goes to the client as logging notifications (`notifications/message`, the level by console
 * method, at or above the level the client set) and its reported values as progress notifications when the call
 * carries a `progressToken`. With a `session` name, the code is a cell of that session instead (a script whose
 * declarations persist for the next calls with the same name), when the host keeps sessions. The server runs nothing
 * itself: it takes the host's one path for runs as a port (`run`, from `createRunOnce`), which checks, admits, times
 * and stops each call's run, and the host's sessions as another (`sessions`). Built on the official SDK's
 * `McpServer`; the transports (stdio in Node, Streamable HTTP in the HTTP app) connect to it. Made per connection or
 * per request: it holds no state but the logging level its client set.
 * @module
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  type LoggingLevel,
  LoggingLevelSchema,
  type ServerNotification,
  type ServerRequest,
  SetLevelRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker-provider.js";
import * as z from "zod/v4";
import { resultWire } from "../../core/result-wire.js";
import type { CodeExecutionLog } from "../../core/types.js";
import { declarationsOf } from "../../tools/declarations.js";
import type { ToolRegistry } from "../../tools/registry.js";
import { HostError } from "../errors.js";
import {
  DEFAULT_RUN_TIMEOUT_MS,
  MAX_CODE_BYTES,
  MAX_RUN_MEMORY_BYTES,
  MAX_RUN_TIMEOUT_MS,
  TIMEOUT_RANGE,
} from "../limits.js";
import type { RunAnswer, RunEvent, RunToAnswer } from "../runs/run-once.js";
import { type CellCaller, type CellRequest, SESSION_NAME_PATTERN } from "../sessions/backend.js";
import { cut, summarize } from "./summary.js";

export interface McpServerOptions {
  /** Runs a call's code, bound to the caller's tenant: the host's one path for runs (`createRunOnce(...).run`). */
  run: RunToAnswer;
  /**
   * Whether `run`'s sandbox was made with the Web APIs (`createSandbox({ webApis: true })`): the tool's guide
   * tells the model which globals it may use. Default `false`.
   */
  webApis?: boolean;
  /** Whether `run`'s sandbox was made with `Intl` (`createSandbox({ intl: true })`), for the guide. Default `false`. */
  intl?: boolean;
  /** The services `run`'s runs may import (`import { get } from "kv"`), declared in the tool's guide. */
  tools?: ToolRegistry;
  /** The process environment's documentation (Markdown), served as a resource when given. */
  environmentDocs?: () => string | Promise<string>;
  /**
   * The origins `run`'s sandbox lets guest code fetch (its `fetch.allow`), for the guide to name. Default none: the
   * guide says there is no `fetch`.
   */
  fetchAllow?: readonly string[];
  /** The host's sessions, for `run_code`'s `session`; without them the tool has no `session`. */
  sessions?: McpSessions;
  /** The npm packages `run`'s sandbox has booted (its `packages`), for the guide to list. Default none. */
  packages?: readonly { specifier: string; version: string }[];
}

/**
 * Runs one cell of the caller's session named `name`, made on first use; throws a `HostError` (or the core's
 * `SessionError`), having run nothing, when refused.
 */
export type SessionCellToAnswer = (name: string, cell: CellRequest, caller: CellCaller) => Promise<RunAnswer>;

/** How a host keeps `run_code`'s sessions. */
export interface McpSessions {
  run: SessionCellToAnswer;
  /** One sentence for the tool's guide: how long a session lives, and how many a client may keep. */
  lifetime: string;
}

/** `run_code`'s `session`: a name the client picks, refused with a clear error when malformed. */
const sessionName = z
  .string()
  .regex(SESSION_NAME_PATTERN, "A session name is 1 to 64 letters, digits, '_', '-', '.' or ':'")
  .optional()
  .describe(
    "Runs the code as a cell of the session of this name (made on first use): declarations and state persist between calls with the same name.",
  );

/** The logging level of each console method's entries. */
const LOG_LEVELS: Record<CodeExecutionLog["level"], LoggingLevel> = {
  log: "info",
  info: "info",
  warn: "warning",
  error: "error",
  debug: "debug",
};
const SEVERITY = LoggingLevelSchema.options;

const WITHOUT_WEB_APIS = `- Only ECMAScript built-ins, \`structuredClone\` and \`queueMicrotask\` exist: no \`fetch\`, timers, \`require\`,
  \`process\`, file system, \`eval\` or \`new Function\`, unless a service below provides it.`;
/** The Web APIs, and `fetch` when the sandbox reaches `fetchAllow`. */
const withWebApis = (
  fetchAllow: readonly string[],
) => `- ECMAScript built-ins, \`structuredClone\`, \`queueMicrotask\` and these Web APIs exist: \`URL\`, \`URLSearchParams\`,
  \`TextEncoder\`, \`TextDecoder\` (UTF-8), \`atob\`, \`btoa\`, \`crypto.getRandomValues\`, \`crypto.randomUUID\`,
  \`crypto.subtle\` (SHA digests, HMAC, AES-GCM), \`performance.now\`, \`setTimeout\`,
  \`setInterval\` (the run waits for pending timers), \`AbortController\`, \`AbortSignal\`, \`Event\`, \`EventTarget\`,
  \`DOMException\`, \`Headers\`, \`Request\`, \`Response\`, \`Blob\`, \`File\`, \`FormData\`. ${
    fetchAllow.length === 0
      ? "No `fetch`,"
      : `\`fetch(url, init?)\` reaches only ${fetchAllow.map((entry) => `\`${entry}\``).join(", ")}: any other URL, or a
  redirect to one, rejects with a TypeError; read a response whole (\`await res.json()\`, \`text()\`). No`
  } \`require\`, \`process\`, file system, \`eval\` or \`new Function\`, unless a service below provides it.`;

/** The guide's line on the npm packages the sandbox has booted (none: no line). */
const packagesGuide = (packages: readonly { specifier: string; version: string }[]) =>
  packages.length === 0
    ? ""
    : `\n- Installed npm packages, imported by name (\`import { z } from "zod"\`), and no others: ${packages
        .map((p) => `\`${p.specifier}\` ${p.version}`)
        .join(", ")}.`;

/** The guide's line on `Intl`, when the sandbox has it. */
const WITH_INTL = `- \`Intl\` exists (\`NumberFormat\`, \`DateTimeFormat\` with time zones, \`Collator\`, \`PluralRules\`,
  \`RelativeTimeFormat\`, \`ListFormat\`, \`Segmenter\`) and \`toLocaleString\`, \`localeCompare\` and \`toLocaleUpperCase\` honour
  their locales, as Node's full ICU answers; with no locale they use "en-US", with no \`timeZone\` "UTC".
`;

/** The guide's part on `session`, given how long the host keeps sessions. */
const sessionGuide = (lifetime: string) => `
Sessions: pass \`session: "name"\` (1 to 64 letters, digits, \`_\`, \`-\`, \`.\` or \`:\`; made on first use) and the state
is kept between calls with the same name, as in a notebook or a REPL; other names are independent. ${lifetime}
- With \`session\`, the code is a cell: a script, not a module. Top-level \`await\` works; its top-level \`var\`,
  \`let\`, \`const\`, \`function\` and \`class\` declarations persist for later cells (a later cell may declare a
  \`let\` or \`const\` again); \`import\` at its top binds like \`const\`. The result is the cell's completion value
  (\`x + 1\` gives its value; a declaration gives undefined), not a default export.
- \`language\` and \`timeoutMs\` apply per cell; \`execute\`, \`globals\` and \`memoryLimitBytes\` do not apply to a
  session. A cell that fails or runs out of time keeps what it did before it stopped.
`;

/** The tool description's guide: how to write code for this sandbox, in the words a model needs. */
function guide(
  declarations: string,
  webApis: boolean,
  intl: boolean,
  fetchAllow: readonly string[],
  sessionLifetime: string | undefined,
  packages: readonly { specifier: string; version: string }[],
): string {
  return `Runs one JavaScript or TypeScript ES module in a fresh QuickJS sandbox and returns its result. ${
    sessionLifetime === undefined
      ? "Nothing\npersists between calls except what you store through a bridged service."
      : "Without\n`session`, nothing persists between calls except what you store through a bridged service."
  }

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
${webApis ? withWebApis(fetchAllow) : WITHOUT_WEB_APIS}${packagesGuide(packages)}
${intl ? WITH_INTL : ""}- Limits: memory ${MAX_RUN_MEMORY_BYTES / 1048576} MiB at most (\`memoryLimitBytes\`), a time limit per call
  (\`timeoutMs\`: ${DEFAULT_RUN_TIMEOUT_MS / 1000} s unless set, at most ${MAX_RUN_TIMEOUT_MS / 1000} s);
  past them the status is \`memory\` or \`terminated\`.

The answer: \`status\` is success, error (an uncaught exception), link_error (a syntax error or an import that does
not resolve), memory or terminated; \`result\` on success; \`error\` with name, message, filename, line and column
otherwise; \`reports\`, \`logs\` and \`durationMs\` always.
${sessionLifetime === undefined ? "" : sessionGuide(sessionLifetime)}${declarations === "" ? "" : `\nServices importable as modules (TypeScript declarations; each function returns a Promise and throws with the service's message when a call fails):\n\n\`\`\`ts\n${declarations}\`\`\`\n`}`;
}

export function createMcpServer(options: McpServerOptions): McpServer {
  const {
    run,
    webApis = false,
    intl = false,
    tools,
    environmentDocs,
    fetchAllow = [],
    sessions,
    packages = [],
  } = options;
  const server = new McpServer(
    { name: "runcode", version: "0.1.0" },
    // The SDK's default validator compiles schemas with `new Function`, which Workers refuse.
    { jsonSchemaValidator: new CfWorkerJsonSchemaValidator(), capabilities: { logging: {} } },
  );
  let logLevel: LoggingLevel = "debug";
  server.server.setRequestHandler(SetLevelRequestSchema, (request) => {
    logLevel = request.params.level;
    return {};
  });
  const description = guide(
    tools === undefined ? "" : declarationsOf(tools.list()),
    webApis,
    intl,
    fetchAllow,
    sessions?.lifetime,
    packages,
  );

  server.registerTool(
    "run_code",
    {
      title: "Run JavaScript or TypeScript in a sandbox",
      description,
      inputSchema: {
        // Characters: a string of MAX_CODE_BYTES UTF-8 bytes has at most as many; the bytes are checked by `run`.
        code: z.string().max(MAX_CODE_BYTES).describe(`The ES module to run, up to ${MAX_CODE_BYTES} bytes of UTF-8.`),
        language: z.enum(["typescript", "javascript"]).optional().describe("Default typescript."),
        globals: z.record(z.string(), z.unknown()).optional().describe("Values to define as globals."),
        execute: z
          .object({ fn: z.string().optional(), args: z.array(z.unknown()).optional() })
          .strict()
          .optional()
          .describe("Call this export (default: `default`) with these arguments."),
        memoryLimitBytes: z.number().int().positive().max(MAX_RUN_MEMORY_BYTES).optional(),
        // Refused in the words of every other door.
        timeoutMs: z
          .number({ error: TIMEOUT_RANGE })
          .int({ error: TIMEOUT_RANGE })
          .min(1, { error: TIMEOUT_RANGE })
          .max(MAX_RUN_TIMEOUT_MS, { error: TIMEOUT_RANGE })
          .optional()
          .describe(`Wall-clock limit of the call, default ${DEFAULT_RUN_TIMEOUT_MS}.`),
        ...(sessions === undefined ? {} : { session: sessionName }),
      },
      annotations: { readOnlyHint: false, openWorldHint: false },
    },
    async ({ code, timeoutMs, execute: call, session, ...runOptions }, extra) => {
      const caller: CellCaller = { signal: extra.signal, onEvent: notifier(extra, () => logLevel) };
      let answer: RunAnswer;
      try {
        if (session === undefined || sessions === undefined) {
          // A module without `execute` runs as a script: without a default export it succeeds with no result.
          answer = await run(
            { source: code, options: { ...runOptions, execute: call ?? "script" }, timeoutMs },
            caller,
          );
        } else {
          const { language, ...moduleOptions } = { ...runOptions, ...(call === undefined ? {} : { execute: call }) };
          const unused = Object.keys(moduleOptions);
          if (unused.length > 0) {
            const names = unused.map((key) => `'${key}'`).join(" and ");
            throw new HostError(
              "invalid_request",
              `${names} ${unused.length === 1 ? "does" : "do"} not apply to a session's cell`,
            );
          }
          answer = await sessions.run(
            session,
            { source: code, ...(language === undefined ? {} : { language }), timeoutMs },
            caller,
          );
        }
      } catch (error) {
        return { isError: true, content: [{ type: "text", text: `run_code: ${(error as Error).message}` }] };
      }
      const { result, maxLength } = answer;
      return {
        content: [{ type: "text", text: summarize(result) }],
        structuredContent: resultWire(result, maxLength) as Record<string, unknown>,
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

/**
 * What a call tells its client while it runs: each console entry as a logging notification at its method's level (the
 * data is the entry in wire JSON) unless the client asked for a higher one, and with the call's `progressToken` each
 * reported value as a progress notification (the number reported so far, the value's wire JSON cut short as its
 * message). Notifications go with the call's request; one the client can no longer take is dropped.
 */
function notifier(
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
  logLevel: () => LoggingLevel,
): (event: RunEvent) => void {
  const progressToken = extra._meta?.progressToken;
  let reports = 0;
  const send = (notification: ServerNotification) => extra.sendNotification(notification).catch(() => {});
  return (event) => {
    if (event.type === "log") {
      const level = LOG_LEVELS[event.level];
      if (SEVERITY.indexOf(level) < SEVERITY.indexOf(logLevel())) return;
      void send({
        method: "notifications/message",
        params: { level, logger: "run_code", data: JSON.parse(event.data) },
      });
    } else if (progressToken !== undefined) {
      reports++;
      void send({
        method: "notifications/progress",
        params: { progressToken, progress: reports, message: `report ${reports}: ${cut(event.data)}` },
      });
    }
  };
}
