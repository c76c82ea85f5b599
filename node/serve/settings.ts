/**
 * `runcode serve`'s settings: where it listens, its database, and the edge's settings by the names of wrangler.toml's
 * `[vars]`, from the environment or from flags named after them (`RUNCODE_TENANT_MAX_ACTIVE` is
 * `--tenant-max-active`, `MAX_ACTIVE_PROCESSES` `--max-active-processes`); a flag wins. Defaults are the host's table
 * (`SETTING_DEFAULTS`, which wrangler.toml's `[vars]` state), except the two that depend on the address: on loopback
 * the server answers for its loopback names and serves anonymous callers unless keys are set; anywhere else both must
 * be set. API keys come from the environment only (`RUNCODE_API_KEYS`): a command line is visible to every user of
 * the machine.
 * @module
 */
import { totalmem } from "node:os";
import { parseArgs } from "node:util";
import { linearMemoryBytes } from "../../src/core/engine.js";
import { RUN_DEFAULT_MEMORY_BYTES } from "../../src/host/admission/run-admission.js";
import { MAX_RUN_MEMORY_BYTES, SETTING_DEFAULTS } from "../../src/host/limits.js";
import { type HostSettings, hostSettingsOf } from "../../src/host/settings.js";
import { type LockedBoot, readPackagesLock } from "../packages-lock.js";

/**
 * Bytes of code, stdout, stderr, output and summaries (UTF-8; the output and summaries as JSON, errors included) one
 * tenant's process records may hold together: `RUNCODE_TENANT_STORAGE_BYTES`, `runcode serve`'s own (the edge keeps each process in an object of its own).
 */
const DEFAULT_TENANT_STORAGE_BYTES = 268_435_456;

/**
 * The least `RUNCODE_RUN_MEMORY_BUDGET_BYTES`: a tenant's half of it must hold a run at the default memory limit
 * (36 MiB of linear memory), as the edge's 72 MiB does.
 */
const MIN_RUN_MEMORY_BUDGET_BYTES = 2 * linearMemoryBytes(RUN_DEFAULT_MEMORY_BYTES);

/**
 * The memory of the machine, or of the container (cgroup) it runs in when that is less: what the server's runs,
 * sessions and own heap share.
 */
export function machineMemoryBytes(): number {
  const constrained = process.constrainedMemory();
  const total = totalmem();
  return constrained > 0 && constrained < total ? constrained : total;
}

/**
 * `RUNCODE_RUN_MEMORY_BUDGET_BYTES`'s default: the linear memory the `/run` and `run_code` runs in flight may hold
 * together on a machine of `machineBytes` whose worker threads run `threads` runs at once. Enough for every thread to
 * hold a run at the largest memory limit (`MAX_RUN_MEMORY_BYTES`, 68 MiB of linear memory: 544 MiB for 8 threads),
 * since runs past the threads wait for one without memory of their own; never more than a quarter of the machine's
 * memory (the rest is the server's, its sessions' and the processes'); never less than
 * {@link MIN_RUN_MEMORY_BUDGET_BYTES}.
 */
export function runMemoryBudgetOf(machineBytes: number, threads: number): number {
  const perThread = linearMemoryBytes(MAX_RUN_MEMORY_BYTES);
  return Math.max(MIN_RUN_MEMORY_BUDGET_BYTES, Math.min(threads * perThread, Math.floor(machineBytes / 4)));
}

/** Settings a flag can give, by name. */
const FLAG_SETTINGS = [
  ...Object.keys(SETTING_DEFAULTS),
  "RUNCODE_MCP_SERVERS",
  "RUNCODE_TENANT_STORAGE_BYTES",
  "RUNCODE_RUN_MEMORY_BUDGET_BYTES",
  "RUNCODE_PACKAGES",
] as const;

/** `RUNCODE_TENANT_MAX_ACTIVE` -> `tenant-max-active`. */
const flagOf = (setting: string) =>
  setting
    .replace(/^RUNCODE_/, "")
    .toLowerCase()
    .replaceAll("_", "-");

export const SERVE_USAGE = `usage: runcode serve [--port 8080] [--host 127.0.0.1] [--db file:runcode.db] [--db-auth-token token]
       [--${FLAG_SETTINGS.map(flagOf).join(" value] [--")} value]
Serves the HTTP API (processes, sessions, /run, /mcp, the catalog) and the playground on Node, with records,
sessions and kv values in libSQL: a database file, or a libSQL server (--db libsql://..., its token in --db-auth-token or
RUNCODE_DB_AUTH_TOKEN; --db defaults to RUNCODE_DB, then file:runcode.db). Each setting is also read from the environment variable it is named after (--tenant-max-active:
RUNCODE_TENANT_MAX_ACTIVE); API keys only from RUNCODE_API_KEYS. On loopback it serves anonymous callers unless keys
are set; on any other address set RUNCODE_ORIGINS and RUNCODE_API_KEYS (or RUNCODE_ALLOW_ANONYMOUS=true).
--packages runcode-packages.json (RUNCODE_PACKAGES) boots the npm packages \`runcode packages add\` listed there into
every run and session, which import them by name.
With --retention-days N, a process that ended more than N days ago is deleted (swept at start, then hourly).
--tenant-storage-bytes (default ${DEFAULT_TENANT_STORAGE_BYTES}) caps the bytes one tenant's process records
keep (code, output, summaries and errors). --run-memory-budget-bytes caps the linear memory the /run and run_code runs in flight hold together, one
tenant's at most half (default: enough for each worker thread to hold the largest run, at most a quarter of the
machine's memory; at least ${MIN_RUN_MEMORY_BUDGET_BYTES}). One server owns a database file (it holds <file>.lock while it runs). SIGINT or SIGTERM stops it: it takes no
more requests, ends running processes (canceled), then gives requests in flight a few seconds to finish.`;

export interface ServeOptions {
  port: number;
  host: string;
  db: { url: string; authToken?: string };
  /** The host's settings; `origins` are the loopback names of `port` unless set (see {@link originsFor}). */
  settings: HostSettings;
  /** Whether `RUNCODE_ORIGINS` was set: if not, the origins follow the port the server gets. */
  originsSet: boolean;
  /** `RUNCODE_TENANT_STORAGE_BYTES` ({@link DEFAULT_TENANT_STORAGE_BYTES}). */
  tenantStorageBytes: number;
  /** `RUNCODE_RUN_MEMORY_BUDGET_BYTES`, or `undefined`: the machine's ({@link runMemoryBudgetOf}). */
  runMemoryBudgetBytes: number | undefined;
  /** The npm packages of the lock file at `RUNCODE_PACKAGES` (`runcode packages add`), booted into every run's sandbox. */
  packages?: LockedBoot;
}

/** Whether `host` is a loopback address or name: only there may the server guess its names and go without keys. */
const isLoopback = (host: string) => /^(127(\.\d{1,3}){3}|localhost|::1|\[::1\])$/i.test(host);

/** The names a loopback server on `port` answers for (as wrangler.toml lists them for port 8787). */
export const originsFor = (port: number) => [
  `http://127.0.0.1:${port}`,
  `http://localhost:${port}`,
  `http://[::1]:${port}`,
];

/** The options of `args` (after `serve`) and `env`; throws a `TypeError` that names the bad flag or setting. */
export async function serveOptionsOf(args: string[], env: NodeJS.ProcessEnv): Promise<ServeOptions> {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      port: { type: "string", default: "8080" },
      host: { type: "string", default: "127.0.0.1" },
      db: { type: "string", default: env.RUNCODE_DB ?? "file:runcode.db" },
      "db-auth-token": { type: "string" },
      ...Object.fromEntries(FLAG_SETTINGS.map((setting) => [flagOf(setting), { type: "string" as const }])),
    },
  });
  const flags = values as Record<string, string | undefined>;
  const port = Number(flags.port);
  if (!/^\d{1,5}$/.test(flags.port ?? "") || port > 65_535) {
    throw new TypeError(`--port must be a port number from 0 to 65535, got ${JSON.stringify(flags.port)}`);
  }
  const host = flags.host as string;
  const given: Record<string, string | undefined> = {};
  for (const setting of [...FLAG_SETTINGS, "RUNCODE_API_KEYS"]) given[setting] = flags[flagOf(setting)] ?? env[setting];
  const keyed = (given.RUNCODE_API_KEYS ?? "").trim() !== "";
  if (!isLoopback(host)) {
    if (given.RUNCODE_ORIGINS === undefined) {
      throw new TypeError(
        `--host ${host} is not a loopback address: set RUNCODE_ORIGINS (or --origins) to the origins clients reach it at`,
      );
    }
    if (!keyed && given.RUNCODE_ALLOW_ANONYMOUS === undefined) {
      throw new TypeError(
        `--host ${host} is not a loopback address: set RUNCODE_API_KEYS (tenant:key entries), or RUNCODE_ALLOW_ANONYMOUS=true to serve anyone`,
      );
    }
  }
  const settings = await hostSettingsOf({
    ...SETTING_DEFAULTS,
    RUNCODE_ALLOW_ANONYMOUS: String(isLoopback(host)),
    RUNCODE_ORIGINS: originsFor(port).join(","),
    ...Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined)),
  });
  const storage = given.RUNCODE_TENANT_STORAGE_BYTES ?? String(DEFAULT_TENANT_STORAGE_BYTES);
  if (!/^[1-9]\d{0,15}$/.test(storage) || !Number.isSafeInteger(Number(storage))) {
    throw new TypeError(`RUNCODE_TENANT_STORAGE_BYTES must be a positive integer, got ${JSON.stringify(storage)}`);
  }
  const budget = given.RUNCODE_RUN_MEMORY_BUDGET_BYTES;
  if (
    budget !== undefined &&
    (!/^[1-9]\d{0,15}$/.test(budget) ||
      !Number.isSafeInteger(Number(budget)) ||
      Number(budget) < MIN_RUN_MEMORY_BUDGET_BYTES)
  ) {
    throw new TypeError(
      `RUNCODE_RUN_MEMORY_BUDGET_BYTES must be an integer of at least ${MIN_RUN_MEMORY_BUDGET_BYTES} (a tenant's half holds a run at the default memory limit), got ${JSON.stringify(budget)}`,
    );
  }
  const authToken = flags["db-auth-token"] ?? env.RUNCODE_DB_AUTH_TOKEN;
  return {
    port,
    host,
    db: { url: flags.db as string, ...(authToken === undefined ? {} : { authToken }) },
    settings,
    originsSet: given.RUNCODE_ORIGINS !== undefined,
    tenantStorageBytes: Number(storage),
    runMemoryBudgetBytes: budget === undefined ? undefined : Number(budget),
    ...(given.RUNCODE_PACKAGES === undefined ? {} : { packages: readPackagesLock(given.RUNCODE_PACKAGES) }),
  };
}
