/**
 * The edge host's settings, read once from the Worker's environment (`[vars]` in wrangler.toml, secrets, `.dev.vars`
 * or `--var` locally). A bad value is an error that names the setting, never a silent default.
 * @module
 */
import { AllowList } from "../src/fetch/allow-list.js";
import { type Access, accessFrom, type HttpUpstream, httpUpstreamsFrom, originOf } from "../src/host/index.js";
import type { FetchOptions } from "../src/core/types.js";

export interface EdgeConfig {
  access: Access;
  /** The origins the deployment is served at (`RUNCODE_ORIGINS`): the only names it answers for. */
  origins: string[];
  corsOrigins: string[];
  /** Processes active at once across the deployment. */
  maxActive: number;
  tenantMaxActive: number;
  tenantRunsPerMinute: number;
  tenantKvBytes: number;
  /** Upstream MCP servers bridged into `POST /mcp` (`RUNCODE_MCP_SERVERS`). */
  mcpServers: Record<string, HttpUpstream>;
  /** The sandbox's own stop for `POST /run`: guest CPU milliseconds (each process run's most too) and fuel (the engine's metered work). */
  runCpuMs: number;
  runFuel: number;
  /** The guest's `fetch` (`RUNCODE_FETCH_ALLOW`), in `/run`, `/mcp` and processes; none without it. */
  fetch: FetchOptions | undefined;
}

/** The settings as strings, whatever types `wrangler types` inferred from the defaults in wrangler.toml. */
type Settings = Partial<Record<string, unknown>>;

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

export async function configOf(env: Env): Promise<EdgeConfig> {
  const settings = env as unknown as Settings;
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
    tenantKvBytes: count(settings, "RUNCODE_TENANT_KV_BYTES"),
    mcpServers: mcpServersOf(settings),
    runCpuMs: count(settings, "RUN_CPU_MS"),
    runFuel: count(settings, "RUN_FUEL"),
    fetch: fetchOf(settings),
  };
}
