/**
 * The host's caps and defaults in one table, the same at every front door (`POST /run`, MCP's `run_code` over HTTP
 * and stdio, `POST /processes`) and on every host (Node, the edge): what a client may send, what a run or a process
 * may ask for, and when a refused client may try again. Each bounds host work before that work starts, with a frozen
 * clock too.
 * @module
 */

import { DEFAULT_MEMORY_LIMIT_BYTES } from "../core/sandbox.js";
import { DEFAULT_TIMEOUT_MS } from "../environment/environment.js";
import { utf8Length } from "../values/json.js";
import { HostError } from "./errors.js";

/**
 * Largest code a client may send, in UTF-8 bytes: `POST /run`'s source and modules together, a process's code,
 * `run_code`'s code. Transpiling and parsing take time linear in it.
 */
export const MAX_CODE_BYTES = 100 * 1024;
/** Largest `POST /run` and `POST /mcp` body. */
export const MAX_RUN_BODY_BYTES = 1_048_576;
/** Largest `POST /processes` body when the app is given none (before the code's own cap). */
export const DEFAULT_MAX_BODY_BYTES = 1_048_576;

/**
 * Largest heap a run may ask for (`memoryLimitBytes` of `/run` and `run_code`): the core's default cap, well below
 * the 128 MB a Worker isolate may use.
 */
export const MAX_RUN_MEMORY_BYTES = DEFAULT_MEMORY_LIMIT_BYTES;
/**
 * Time limit of a run that sets no `timeoutMs`, at every door that takes one: `POST /run`, MCP's `run_code`, a
 * session's cell and a process (the environment's default). docs/limits.md#timeoutms says why one range fits them.
 */
export const DEFAULT_RUN_TIMEOUT_MS = DEFAULT_TIMEOUT_MS;
/** Longest `timeoutMs` any door takes: a process is a long run, and a run may be as long. */
export const MAX_RUN_TIMEOUT_MS = 600_000;
/** Processes queued, running or terminating at once on a host that sets no number; more are refused (HTTP 429). */
export const DEFAULT_MAX_ACTIVE_PROCESSES = 16;
/**
 * Seconds a refusal for want of a process slot asks the client to wait: a slot frees when any active process ends,
 * and with a few of them active at their 30 s default one ends every few seconds.
 */
export const SLOT_RETRY_SECONDS = 1;

/**
 * The default of every setting of a served host (settings.ts reads them), in one table: wrangler.toml's `[vars]` state
 * these, `runcode serve` starts from them (its address decides `RUNCODE_ALLOW_ANONYMOUS` and `RUNCODE_ORIGINS`), and
 * docs/deploy.md's settings table states them (test/host/setting-defaults.test.ts keeps the three equal). The secrets
 * (`RUNCODE_API_KEYS`, `RUNCODE_MCP_SERVERS`) have none.
 */
export const SETTING_DEFAULTS = Object.freeze({
  RUNCODE_ALLOW_ANONYMOUS: "false",
  RUNCODE_ORIGINS: "http://127.0.0.1:8787,http://localhost:8787,http://[::1]:8787",
  RUNCODE_CORS_ORIGINS: "",
  RUNCODE_TENANT_MAX_ACTIVE: "32",
  RUNCODE_TENANT_RUNS_PER_MINUTE: "600",
  RUNCODE_TENANT_CPU_MS_PER_MINUTE: "1500",
  RUNCODE_TENANT_CPU_BURST_MS: "500",
  RUNCODE_TENANT_KV_BYTES: "16777216",
  MAX_ACTIVE_PROCESSES: "256",
  RUN_CPU_MS: "2000",
  RUN_FUEL: "2500000000",
  RUNCODE_WEB_APIS: "false",
  RUNCODE_INTL: "false",
  RUNCODE_FETCH_ALLOW: "",
  RUNCODE_RETENTION_DAYS: "",
  RUNCODE_SESSIONS_PER_TENANT: "100",
  RUNCODE_SESSION_BYTES_PER_TENANT: "268435456",
  RUNCODE_SESSION_CELLS_PER_MINUTE: "600",
  RUNCODE_SESSION_IDLE_DAYS: "7",
});

/** The `payload_too_large` refusal of `sources` larger than {@link MAX_CODE_BYTES} together, else `undefined`. */
export function codeTooLarge(what: string, sources: readonly string[]): HostError | undefined {
  const bytes = sources.reduce((sum, source) => sum + utf8Length(source), 0);
  return bytes > MAX_CODE_BYTES
    ? new HostError("payload_too_large", `${what} is larger than ${MAX_CODE_BYTES} bytes`)
    : undefined;
}

/**
 * The `payload_too_large` refusal of a run's source and the sources of its `modules` (a process's code and modules)
 * larger than {@link MAX_CODE_BYTES} together, else `undefined`; what is not a string is left to the modules' check.
 */
export function sourcesTooLarge(source: string, modules: unknown): HostError | undefined {
  const sources = typeof modules === "object" && modules !== null ? Object.values(modules) : [];
  return codeTooLarge("The code (its source and modules together)", [
    source,
    ...sources.filter((text): text is string => typeof text === "string"),
  ]);
}

/** The refusal of a `timeoutMs` out of range, in the same words at every door. */
export const TIMEOUT_RANGE = `timeoutMs must be an integer from 1 to ${MAX_RUN_TIMEOUT_MS}`;

/**
 * A run's `timeoutMs` at every door: an integer from 1 to {@link MAX_RUN_TIMEOUT_MS}, {@link DEFAULT_RUN_TIMEOUT_MS}
 * when it is `undefined`; else a 400 naming the range.
 */
export function timeoutWithin(timeoutMs: unknown): number {
  if (timeoutMs === undefined) return DEFAULT_RUN_TIMEOUT_MS;
  if (
    typeof timeoutMs !== "number" ||
    !Number.isInteger(timeoutMs) ||
    timeoutMs < 1 ||
    timeoutMs > MAX_RUN_TIMEOUT_MS
  ) {
    throw new HostError("invalid_request", TIMEOUT_RANGE);
  }
  return timeoutMs;
}
