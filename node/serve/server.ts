/**
 * `runcode serve`: the edge's HTTP app on Node (`@hono/node-server`), with records, `kv` values and sessions in libSQL
 * (node/serve/libsql-stores.ts, libsql-sessions.ts), processes on the environment module's worker threads, `/run` in
 * the thread pool, sessions' realms on worker threads of their own (node/session-threads/), and the edge's settings and limits
 * (src/host/settings.ts), but with an admission budget for `/run` sized from the machine (`runMemoryBudgetOf`). What
 * no route matches is the playground's.
 *
 * Starting, it locks its database file (one server owns a database: node/serve/lock.ts), ends the runs the database
 * shows active (the last stop cut them off), starts sweeping out the sessions idle past their TTL, and with a
 * retention, the processes past it (node/serve/retention.ts). Stopping ({@link Served.stop}), it stops accepting work
 * (new connections, and requests on open ones answer 503), ends every active process (each killed, `canceled`, its
 * final record written) and every running cell (its session's state written, as after every cell) first, then gives
 * requests in flight {@link DRAIN_MS} to finish (a streamed `/run` gets its result), closes the database and releases
 * the lock; the sweeps stop first.
 * @module
 */
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import { instantiate } from "../../node/environment.js";
import { TenantCpuBudget } from "../../src/host/admission/cpu-budget.js";
import { MemoryQuotas } from "../../src/host/admission/quotas.js";
import { createApp } from "../../src/host/http/app.js";
import { createHost } from "../../src/host/index.js";
import { failCutOffRuns } from "../../src/host/processes/restarts.js";
import { SessionService } from "../../src/host/sessions/session-service.js";
import {
  appOptionsOf,
  environmentOptionsOf,
  processCpuSharesOf,
  RUN_CAP_NAMES,
  runCpuSharesOf,
  runSandboxOptionsOf,
  runWebOf,
} from "../../src/host/settings.js";
import { createSandbox, MAX_THREADS } from "../index.js";
import { threadedSessions } from "../session-threads/engine.js";
import { libsqlSessionStore } from "./libsql-sessions.js";
import { LibsqlProcessStore, libsqlKeyValueStores, openDatabase } from "./libsql-stores.js";
import { type DatabaseLock, lockDatabase } from "./lock.js";
import { playgroundFiles } from "./playground.js";
import { sweepEndedProcesses, sweepEvery } from "./retention.js";
import { machineMemoryBytes, originsFor, runMemoryBudgetOf, type ServeOptions } from "./settings.js";

/** How long requests in flight (event streams included) may go on once the processes have ended. */
const DRAIN_MS = 5_000;
/** How long the active processes' kills and final writes may take before the drain goes on regardless. */
const CUT_OFF_MS = 5_000;

const within = (ms: number, work: Promise<unknown>) =>
  Promise.race([work, new Promise((resolve) => setTimeout(resolve, ms).unref())]);

interface Served {
  /** Where it listens (`http://127.0.0.1:8080`). */
  url: string;
  /** Runs the start ended, cut off by the last stop. */
  cutOff: number;
  /** Whether the playground's files are served. */
  playground: boolean;
  /** Stops as described in the module's header; resolves when the database is closed. */
  stop(): Promise<void>;
}

/** `work`, or its failure as an error that says what failed and why (with the cause: `fetch failed` says little). */
async function failingAs<T>(what: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const { message, cause } = error as Error;
    throw new Error(`${what}: ${message}${cause instanceof Error ? ` (${cause.message})` : ""}`);
  }
}

export async function serve(options: ServeOptions): Promise<Served> {
  const lock = lockDatabase(options.db.url);
  try {
    return await serveLocked(options, lock);
  } catch (error) {
    lock.release();
    throw error;
  }
}

async function serveLocked(options: ServeOptions, lock: DatabaseLock): Promise<Served> {
  const { settings } = options;
  const db = await failingAs(`cannot open the database ${options.db.url}`, () =>
    openDatabase(options.db.url, options.db.authToken),
  );
  const store = new LibsqlProcessStore(db);
  const cutOff = await failCutOffRuns(store, Date.now());
  // One share of CPU per tenant, drawn on by its processes and its `/run` and `run_code` calls alike.
  const cpu = new TenantCpuBudget(settings.tenantCpu);
  const { service, tools } = await createHost({
    store,
    kv: libsqlKeyValueStores(db),
    kvLimits: { maxStoreBytes: settings.tenantKvBytes },
    maxActiveProcesses: settings.maxActive,
    maxActivePerTenant: settings.tenantMaxActive,
    maxTenantStorageBytes: options.tenantStorageBytes,
    cpu: processCpuSharesOf(settings, cpu),
    // As many runs at once as the pool has threads, with `/run`'s sandbox settings and packages; a run's guest CPU is
    // capped as on the edge.
    environment: {
      module: instantiate({
        ...environmentOptionsOf(settings),
        concurrency: MAX_THREADS,
        ...(options.packages === undefined ? {} : { bootModules: options.packages.bootModules }),
      }),
    },
  });
  const runOptions = {
    ...runSandboxOptionsOf(settings),
    ...(options.packages === undefined ? {} : { bootModules: options.packages.bootModules }),
  };
  // The default path: a run starts on this thread for a slice of fuel and goes on on a worker thread past it, so a
  // trivial /run never pays the hand-off and no run holds the event loop longer than the slice.
  const sandbox = createSandbox({ ...runOptions, threads: "auto" });
  // A session's cells run with `/run`'s sandbox settings and CPU shares, on worker threads so that no cell holds the
  // event loop; its state is in the database between cells.
  const sessions = new SessionService({
    store: await libsqlSessionStore(db),
    engine: threadedSessions(runOptions),
    limits: settings.sessions,
    defaultMemoryLimitBytes: runOptions.defaultMemoryLimitBytes,
    tools,
    cpu: runCpuSharesOf(settings, cpu),
    capNames: RUN_CAP_NAMES,
  });
  const fallback = playgroundFiles();
  let app: ReturnType<typeof createApp> | undefined;
  let stopping: Promise<void> | undefined;
  const server = createAdaptorServer({
    fetch: (request) =>
      stopping === undefined
        ? app?.fetch(request)
        : Response.json(
            { error: { code: "overloaded", message: "The server is stopping: it takes no more requests" } },
            { status: 503, headers: { connection: "close", "retry-after": "1" } },
          ),
    hostname: options.host,
  });
  await failingAs(
    `cannot listen on ${options.host}:${options.port}`,
    () =>
      new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(options.port, options.host, () => {
          server.off("error", reject);
          resolve();
        });
      }),
  );
  const { port } = server.address() as AddressInfo;
  // Made before the first request's turn of the event loop: the origins follow the port the server got.
  app = createApp({
    processes: service,
    catalog: service,
    sessions,
    run: {
      runCode: sandbox.runCode,
      ...runWebOf(settings),
      ...(options.packages === undefined ? {} : { packages: options.packages.packages }),
      defaultMemoryLimitBytes: runOptions.defaultMemoryLimitBytes,
      tools,
      cpu: runCpuSharesOf(settings, cpu),
      // Sized from the machine, and one event loop: the end of a run admits the waiting runs it makes room for.
      admission: {
        memoryBudgetBytes: options.runMemoryBudgetBytes ?? runMemoryBudgetOf(machineMemoryBytes(), MAX_THREADS),
        wakeAcrossRequests: true,
      },
    },
    ...appOptionsOf(settings),
    ...(options.originsSet ? {} : { origins: originsFor(port) }),
    quotas: new MemoryQuotas(settings.tenantRunsPerMinute),
    ...(fallback === undefined ? {} : { fallback }),
  });
  const host = options.host.includes(":") && !options.host.startsWith("[") ? `[${options.host}]` : options.host;
  const sweeps =
    settings.retentionMs === undefined
      ? undefined
      : sweepEndedProcesses(store, {
          retentionMs: settings.retentionMs,
          onError: (error) => console.error("runcode serve: the retention sweep failed:", error),
        });
  const idleSweeps = sweepEvery(
    () => sessions.sweepIdle(),
    (error) => console.error("runcode serve: the idle sessions' sweep failed:", error),
  );
  return {
    url: `http://${host}:${port}`,
    cutOff: cutOff.length,
    playground: fallback !== undefined,
    stop: () => {
      stopping ??= (async () => {
        await Promise.all([sweeps?.stop(), idleSweeps.stop()]);
        const closed = new Promise((resolve) => server.close(resolve));
        if ("closeIdleConnections" in server) server.closeIdleConnections();
        await within(CUT_OFF_MS, Promise.all([service.stopAll(), sessions.stop("The server is stopping")]));
        await within(DRAIN_MS, closed);
        if ("closeAllConnections" in server) server.closeAllConnections();
        db.close();
        lock.release();
      })();
      return stopping;
    },
  };
}
