/**
 * A served host's settings, by the names of wrangler.toml's `[vars]`: the edge reads them from the Worker's
 * environment (`[vars]`, secrets, `.dev.vars` or `--var` locally), `runcode serve` from its environment and flags. A
 * bad value is an error that names the setting, never a silent default.
 * @module
 */
import type { SafetyCapNames } from "../core/limits.js";
import { FUEL_PER_MS, safetyCapWithin } from "../core/sandbox.js";
import type { FetchOptions } from "../core/types.js";
import { AllowList } from "../fetch/allow-list.js";
import { type HttpUpstream, httpUpstreamsFrom } from "../tools/upstream-config.js";
import { type CpuBudget, type CpuShare, type CpuShares, cpuShareOf } from "./admission/cpu-budget.js";
import { RUN_DEFAULT_MEMORY_BYTES } from "./admission/run-admission.js";
import { type Access, accessFrom } from "./http/auth.js";
import { originOf } from "./http/origins.js";
import { idleMsOf, type SessionLimits } from "./sessions/limits.js";

export interface HostSettings {
  access: Access;
  /** The origins the deployment is served at (`RUNCODE_ORIGINS`): the only names it answers for. */
  origins: string[];
  corsOrigins: string[];
  /** Processes active at once across the deployment. */
  maxActive: number;
  tenantMaxActive: number;
  tenantRunsPerMinute: number;
  /**
   * Each tenant's share of guest CPU, in fuel (`RUNCODE_TENANT_CPU_MS_PER_MINUTE` and `RUNCODE_TENANT_CPU_BURST_MS`
   * at `FUEL_PER_MS`): a token bucket its runs' and processes' fuel caps are reserved from.
   */
  tenantCpu: CpuShare;
  tenantKvBytes: number;
  /** Upstream MCP servers bridged into `POST /mcp` (`RUNCODE_MCP_SERVERS`). */
  mcpServers: Record<string, HttpUpstream>;
  /** The sandbox's own stop for `POST /run`: guest CPU milliseconds (each process run's most too) and fuel (the engine's metered work). */
  runCpuMs: number;
  runFuel: number;
  /** Whether runs and processes have the Web APIs (`RUNCODE_WEB_APIS`, or a fetch setting, which needs them). */
  webApis: boolean;
  /** Whether `/run`, `run_code` and sessions have `Intl` (`RUNCODE_INTL`, `SandboxOptions.intl`). */
  intl: boolean;
  /** Runs' and processes' `fetch` (`RUNCODE_FETCH_ALLOW`); none without it. */
  fetch: FetchOptions | undefined;
  /**
   * How long an ended process is kept after its end, in milliseconds (`RUNCODE_RETENTION_DAYS`); `undefined` keeps it
   * until it is deleted.
   */
  retentionMs: number | undefined;
  /**
   * Each tenant's bounds on sessions (`RUNCODE_SESSIONS_PER_TENANT`, `RUNCODE_SESSION_BYTES_PER_TENANT`,
   * `RUNCODE_SESSION_CELLS_PER_MINUTE`, `RUNCODE_SESSION_IDLE_DAYS`).
   */
  sessions: SessionLimits;
}

/** The settings as given: strings, or whatever types `wrangler types` inferred from the defaults in wrangler.toml. */
export type Settings = Partial<Record<string, unknown>>;

/** `RUNCODE_MCP_SERVERS`: `{"mcpServers": {...}}` as MCP clients write it, servers by URL only. Default none. */
function mcpServersOf(settings: Settings): Record<string, HttpUpstream> {
  const raw = settings.RUNCODE_MCP_SERVERS;
  if (raw === undefined || raw === "") return {};
  let config: unknown;
  try {
    config = typeof raw === "string" ? JSON.parse(raw) : raw;
  } catch (error) {
    throw new TypeError(`RUNCODE_MCP_SERVERS is not valid JSON: ${(error as Error).message}`);
  }
  return httpUpstreamsFrom(config, "RUNCODE_MCP_SERVERS");
}

/** A comma-separated setting as its entries. */
function listOf(settings: Settings, name: string): string[] {
  return String(settings[name] ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
}

/** A `"true"` or `"false"` setting; absent is `"false"`. */
function flag(settings: Settings, name: string): boolean {
  const raw = String(settings[name] ?? "false");
  if (raw !== "true" && raw !== "false")
    throw new TypeError(`${name} must be "true" or "false", got ${JSON.stringify(raw)}`);
  return raw === "true";
}

/** `RUNCODE_FETCH_ALLOW`: the origins (and path prefixes) guest code may fetch, comma-separated. Default none. */
function fetchOf(settings: Settings): FetchOptions | undefined {
  const entries = listOf(settings, "RUNCODE_FETCH_ALLOW");
  if (entries.length === 0) return undefined;
  return { allow: new AllowList(entries, (index) => `RUNCODE_FETCH_ALLOW entry ${index + 1}`).entries };
}

function count(settings: Settings, name: string): number {
  const raw = String(settings[name] ?? "");
  if (!/^[1-9][0-9]{0,14}$/.test(raw))
    throw new TypeError(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

/** The most days `RUNCODE_RETENTION_DAYS` may give: 100 years, so that every expiry is a date both hosts can hold. */
const MAX_RETENTION_DAYS = 36_500;
const DAY_MS = 86_400_000;

/** `RUNCODE_RETENTION_DAYS` in milliseconds; unset or empty, `undefined`: processes are kept until deleted. */
function retentionOf(settings: Settings): number | undefined {
  const raw = settings.RUNCODE_RETENTION_DAYS;
  if (raw === undefined || raw === "") return undefined;
  const days = count(settings, "RUNCODE_RETENTION_DAYS");
  if (days > MAX_RETENTION_DAYS) {
    throw new TypeError(`RUNCODE_RETENTION_DAYS must be at most ${MAX_RETENTION_DAYS} days, got ${days}`);
  }
  return days * DAY_MS;
}

/** `RUNCODE_SESSION_IDLE_DAYS` in milliseconds (1 to {@link MAX_RETENTION_DAYS} days). */
function sessionIdleOf(settings: Settings): number {
  const days = count(settings, "RUNCODE_SESSION_IDLE_DAYS");
  if (days > MAX_RETENTION_DAYS) {
    throw new TypeError(`RUNCODE_SESSION_IDLE_DAYS must be at most ${MAX_RETENTION_DAYS} days, got ${days}`);
  }
  return idleMsOf(days);
}

/** The settings of `settings`; throws a `TypeError` that names the first bad one. */
export async function hostSettingsOf(settings: Settings): Promise<HostSettings> {
  return {
    access: await accessFrom({
      apiKeys: typeof settings.RUNCODE_API_KEYS === "string" ? settings.RUNCODE_API_KEYS : undefined,
      allowAnonymous: String(settings.RUNCODE_ALLOW_ANONYMOUS ?? "false"),
    }),
    origins: listOf(settings, "RUNCODE_ORIGINS").map((origin) => originOf(origin, "RUNCODE_ORIGINS")),
    corsOrigins: listOf(settings, "RUNCODE_CORS_ORIGINS"),
    maxActive: count(settings, "MAX_ACTIVE_PROCESSES"),
    tenantMaxActive: count(settings, "RUNCODE_TENANT_MAX_ACTIVE"),
    tenantRunsPerMinute: count(settings, "RUNCODE_TENANT_RUNS_PER_MINUTE"),
    tenantCpu: cpuShareOf(
      count(settings, "RUNCODE_TENANT_CPU_MS_PER_MINUTE"),
      count(settings, "RUNCODE_TENANT_CPU_BURST_MS"),
    ),
    tenantKvBytes: count(settings, "RUNCODE_TENANT_KV_BYTES"),
    mcpServers: mcpServersOf(settings),
    runCpuMs: count(settings, "RUN_CPU_MS"),
    runFuel: count(settings, "RUN_FUEL"),
    webApis: flag(settings, "RUNCODE_WEB_APIS") || fetchOf(settings) !== undefined,
    intl: flag(settings, "RUNCODE_INTL"),
    fetch: fetchOf(settings),
    retentionMs: retentionOf(settings),
    sessions: {
      perTenant: count(settings, "RUNCODE_SESSIONS_PER_TENANT"),
      bytesPerTenant: count(settings, "RUNCODE_SESSION_BYTES_PER_TENANT"),
      cellsPerMinute: count(settings, "RUNCODE_SESSION_CELLS_PER_MINUTE"),
      idleMs: sessionIdleOf(settings),
    },
  };
}

/** The HTTP app's options that the settings decide. */
export const appOptionsOf = (settings: HostSettings) => ({
  access: settings.access,
  origins: settings.origins,
  corsOrigins: settings.corsOrigins,
  mcpServers: settings.mcpServers,
});

/** The fetch setting as sandboxes and the environment take it: `{ fetch }`, or nothing. */
export const fetchOptionOf = (settings: HostSettings) =>
  settings.fetch === undefined ? {} : { fetch: settings.fetch };

/** The settings behind the safety cap of `/run`'s and `run_code`'s sandbox (and processes' CPU), which stops name. */
export const RUN_CAP_NAMES: SafetyCapNames = Object.freeze({ cpuTimeMs: "RUN_CPU_MS", fuel: "RUN_FUEL" });

/**
 * What `/run` and `/mcp` tell of their sandbox: its Web APIs, `Intl`, the origins its `fetch` reaches, and the settings
 * its stops name ({@link RUN_CAP_NAMES}).
 */
export const runWebOf = (settings: HostSettings) => ({
  webApis: settings.webApis,
  intl: settings.intl,
  capNames: RUN_CAP_NAMES,
  ...(settings.fetch === undefined ? {} : { fetchAllow: settings.fetch.allow }),
});

/**
 * The sandbox of `/run` and `run_code`: its stops, the settings' CPU milliseconds and fuel (a run's `timeoutMs` lowers
 * each to as much as stops it within that time, `safetyCapWithin`), its default heap limit, the Web APIs, `Intl` and `fetch`.
 */
export const runSandboxOptionsOf = (settings: HostSettings) => ({
  safetyCap: { cpuTimeMs: settings.runCpuMs, fuel: settings.runFuel },
  defaultMemoryLimitBytes: RUN_DEFAULT_MEMORY_BYTES,
  webApis: settings.webApis,
  intl: settings.intl,
  ...fetchOptionOf(settings),
});

/**
 * The environment module's settings from the host's: `/run`'s Web APIs, `Intl` and `fetch`, and each process run's
 * guest CPU capped at `RUN_CPU_MS` whatever its `timeoutMs`.
 */
export const environmentOptionsOf = (settings: HostSettings) => ({
  maxCpuMs: settings.runCpuMs,
  maxCpuMsSetting: RUN_CAP_NAMES.cpuTimeMs,
  webApis: settings.webApis,
  intl: settings.intl,
  ...fetchOptionOf(settings),
});

/** The shares of CPU of `/run` and `run_code`: `budget`, each run reserving the fuel of its safety cap (within its `timeoutMs`). */
export const runCpuSharesOf = (settings: HostSettings, budget: CpuBudget): CpuShares => ({
  budget,
  fuelOf: (timeoutMs) => safetyCapWithin(timeoutMs, runSandboxOptionsOf(settings).safetyCap).fuel,
});

/**
 * The shares of CPU of processes: `budget`, each run reserving the fuel of the guest CPU it may spend where clocks run
 * (its `timeoutMs`, at most `RUN_CPU_MS`). Where they stand still its fuel cap is its whole `timeoutMs`, and what it
 * spends past the reservation is owed when it ends.
 */
export const processCpuSharesOf = (settings: HostSettings, budget: CpuBudget): CpuShares => ({
  budget,
  fuelOf: (timeoutMs) => Math.min(timeoutMs, settings.runCpuMs) * FUEL_PER_MS,
});
