/**
 * The host's sessions over a {@link SessionStore} and a {@link SessionEngine}: the `SessionBackend` of one process
 * (`runcode serve`), or of whatever keeps one tenant's sessions together.
 *
 * A session lives in memory while it is used and as its snapshot in the store: the snapshot is written after every
 * cell and fork, before the next turn of the session starts, so a crash loses at most a running cell, and a live
 * session is only a cache of its stored state. Live sessions are bounded by count and by the bytes of memory they
 * span; past them, an idle one of the tenant holding the most is closed, its least recently used, and its next cell
 * restores it from the store. A session's cells, forks and deletion take turns ({@link Turns}); cells of different sessions run at once.
 *
 * Per tenant: at most `perTenant` sessions (429 `too_many_sessions`), `bytesPerTenant` bytes of storage (413
 * `session_storage_full`), `cellsPerMinute` cells (429 `rate_limited` with `Retry-After`), and each cell's fuel cap
 * reserved from the tenant's CPU share as a run's is. A cell whose resulting state would pass the storage quota (or
 * that the store has no room for) is still answered (its logs and reports), but as an `error` named
 * `SessionStorageFull` without its value, and its effects are undone: the session goes back to its stored state, so
 * nothing stored is lost and what a client sees is what a restart would give it. The tenant's writes (the quota's
 * check and the store's write) are serialized here, so a tenant's sessions are served by one service at a time.
 * @module
 */
import { INSTANCE_BOOT_FUEL, snapshotFuel } from "../../core/host-fuel.js";
import type { SafetyCapNames } from "../../core/limits.js";
import type { CodeExecutionResult } from "../../core/types.js";
import type { ToolRegistry } from "../../tools/registry.js";
import { type JsonValue, utf8Length } from "../../values/json.js";
import { fromWire } from "../../values/wire.js";
import { type CpuShares, fuelSpentBy } from "../admission/cpu-budget.js";
import { type Bucket, takeToken } from "../admission/quotas.js";
import { HostError, isHostError, retryLater } from "../errors.js";
import { codeTooLarge, MAX_RUN_MEMORY_BYTES, timeoutWithin } from "../limits.js";
import { eventsWithin, namingItsStop, type RunAnswer } from "../runs/run-once.js";
import {
  type CellCaller,
  type CellRequest,
  type CreateSessionInput,
  SESSION_ID_PATTERN,
  SESSION_NAME_PATTERN,
  type SessionBackend,
  type SessionInfo,
  type SessionPage,
  type SessionRequestOptions,
} from "./backend.js";
import type { EngineSession, EngineSessionOptions, SessionEngine } from "./engine.js";
import {
  checkRoom,
  DEFAULT_LIVE_SESSION_BYTES,
  DEFAULT_LIVE_SESSIONS,
  DEFAULT_SESSION_LIMITS,
  type SessionLimits,
} from "./limits.js";
import type { SessionStore, StoredSession } from "./store.js";
import { Turns } from "./turns.js";

/** Cells (and forks) that may wait for a session's turn; past them 429 `session_busy`. */
export const MAX_WAITING_CELLS = 8;
/** Sessions one page of `list` holds when the caller names no limit, and the most it may name. */
const DEFAULT_PAGE = 100;
const MAX_PAGE = 1000;
/** Sessions one round of the idle sweep deletes at most. */
const SWEEP_BATCH = 100;

export interface SessionServiceOptions {
  store: SessionStore;
  /** The platform's `createSession` and `restoreSession`, with its sandbox settings (the same as `POST /run`'s). */
  engine: SessionEngine;
  limits?: SessionLimits;
  /** The heap limit of a session that sets none (`memoryLimitBytes`): the most a cell's answer may take too. */
  defaultMemoryLimitBytes: number;
  /** Services cells may import as bare specifiers, bound to the tenant and scoped to each cell. */
  tools?: ToolRegistry;
  /** The tenants' shares of CPU each cell's fuel cap is reserved from. Default: no shares. */
  cpu?: CpuShares;
  /** The settings behind the engine's safety cap, which a cell's stop by it names (as `/run`'s: run-once.ts). */
  capNames?: SafetyCapNames;
  /** Live sessions kept at most. Default {@link DEFAULT_LIVE_SESSIONS}. */
  maxLive?: number;
  /** Bytes of linear memory live sessions may span together. Default {@link DEFAULT_LIVE_SESSION_BYTES}. */
  maxLiveBytes?: number;
  /** Epoch milliseconds, for `createdAt`, `lastUsedAt`, the idle TTL and the cells' rate. Default `Date.now`. */
  now?: () => number;
}

/** A session known to this service: its turns, and while live its realm. */
interface Entry {
  tenant: string;
  id: string;
  turns: Turns;
  /** The realm while live. */
  session?: EngineSession;
  /** Its stored fields while live (the store holds the same), so a warm cell reads no snapshot. */
  stored?: Stored;
  /** Ends the cell running in it, if any. */
  stop?: (reason: string) => void;
  /** The tool modules of the cell running in it, bound to that cell's scope. */
  tools?: ReturnType<ToolRegistry["modules"]>;
  /** Set once it is deleted: turns waiting for it find no session. */
  deleted: boolean;
}

/** A session's stored fields besides its state. */
type Stored = Omit<StoredSession, "snapshot">;

const notFound = (id: string) => new HostError("not_found", `No session ${JSON.stringify(id.slice(0, 40))}`);

/** A new session id: 128 random bits in hex. */
function newSessionId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

export class SessionService implements SessionBackend {
  readonly #store: SessionStore;
  readonly #engine: SessionEngine;
  readonly #limits: SessionLimits;
  readonly #defaultMemory: number;
  readonly #tools: ToolRegistry | undefined;
  readonly #cpu: CpuShares | undefined;
  readonly #capNames: SafetyCapNames | undefined;
  readonly #maxLive: number;
  readonly #maxLiveBytes: number;
  readonly #now: () => number;
  /** Known sessions by {@link keyOf}, least recently used first. */
  readonly #entries = new Map<string, Entry>();
  /** Per tenant: the turns of its writes (quota checks and stored records). */
  readonly #tenantTurns = new Map<string, Turns>();
  readonly #cellBuckets = new Map<string, Bucket>();
  #stopping = false;

  constructor(options: SessionServiceOptions) {
    this.#store = options.store;
    this.#engine = options.engine;
    this.#limits = options.limits ?? DEFAULT_SESSION_LIMITS;
    this.#defaultMemory = options.defaultMemoryLimitBytes;
    this.#tools = options.tools;
    this.#cpu = options.cpu;
    this.#capNames = options.capNames;
    this.#maxLive = options.maxLive ?? DEFAULT_LIVE_SESSIONS;
    this.#maxLiveBytes = options.maxLiveBytes ?? DEFAULT_LIVE_SESSION_BYTES;
    this.#now = options.now ?? Date.now;
  }

  async create(tenant: string, input: CreateSessionInput): Promise<{ id: string }> {
    this.#refuseWhenStopping();
    const options = checkedOptions(input.options ?? {});
    const { name } = input;
    if (name !== undefined && !SESSION_NAME_PATTERN.test(name)) {
      throw new HostError("invalid_request", `A session's name is 1 to 64 of A-Z a-z 0-9 _ - . :`);
    }
    return this.#asTenant(tenant, async () => {
      if (name !== undefined && (await this.#store.named(tenant, name)) !== undefined) {
        throw new HostError("invalid_request", `This tenant has a session named ${JSON.stringify(name)}`);
      }
      return { id: await this.#createLocked(tenant, options, name) };
    }).finally(() => this.#trim());
  }

  async open(tenant: string, name: string, options: SessionRequestOptions = {}) {
    this.#refuseWhenStopping();
    if (!SESSION_NAME_PATTERN.test(name)) {
      throw new HostError("invalid_request", `A session's name is 1 to 64 of A-Z a-z 0-9 _ - . :`);
    }
    const checked = checkedOptions(options);
    return this.#asTenant(tenant, async () => {
      const found = await this.#store.named(tenant, name);
      if (found !== undefined) return { id: found, created: false };
      return { id: await this.#createLocked(tenant, checked, name), created: true };
    }).finally(() => this.#trim());
  }

  async run(
    tenant: string,
    id: string,
    cell: CellRequest,
    caller: CellCaller = {},
  ): Promise<{ answer: Promise<RunAnswer> }> {
    this.#refuseWhenStopping();
    const { source, language } = cell;
    if (typeof source !== "string") throw new HostError("invalid_request", "'source' must be a string");
    const tooLarge = codeTooLarge("The cell", [source]);
    if (tooLarge !== undefined) throw tooLarge;
    if (language !== undefined && language !== "javascript" && language !== "typescript") {
      throw new HostError("invalid_request", `'language' must be "javascript" or "typescript"`);
    }
    const timeoutMs = timeoutWithin(cell.timeoutMs);
    const entry = await this.#entry(tenant, id);
    this.#refuseWhenBusy(entry);
    this.#takeCell(tenant);
    // In line at once, before any wait, so the entry is never dropped as idle meanwhile.
    const turn = entry.turns.take();
    let reserved = 0;
    let release: (() => void) | undefined;
    let stored: Stored;
    let session: EngineSession;
    let restored: number;
    try {
      if (this.#cpu !== undefined) reserved = await this.#cpu.budget.reserve(tenant, this.#cpu.fuelOf(timeoutMs));
      release = await turn;
      this.#refuseWhenStopping();
      if (caller.signal?.aborted) throw new HostError("invalid_request", "The request ended before the cell started");
      ({ stored, session, restored } = await this.#live(entry));
    } catch (error) {
      (release ?? (await turn))();
      await this.#settle(tenant, reserved, 0);
      this.#trim();
      throw error;
    }
    const done = release;
    const maxLength = stored.options.memoryLimitBytes ?? this.#defaultMemory;
    const answer = (async (): Promise<RunAnswer> => {
      try {
        if (this.#tools !== undefined) entry.tools = this.#tools.modules(tenant);
        const listeners = caller.onEvent === undefined ? {} : eventsWithin(maxLength, caller.onEvent);
        const execution = session.run(source, {
          timeoutMs,
          ...(language === undefined ? {} : { language }),
          ...(caller.signal === undefined ? {} : { signal: caller.signal }),
          ...listeners,
        });
        entry.stop = (reason) => execution.terminate(reason);
        const result = await execution;
        delete entry.stop;
        delete entry.tools;
        const fuel = fuelSpentBy(result, reserved);
        // The host's work on the session's state (its restore, its snapshot) counts for the tenant too.
        let stateFuel = restored;
        try {
          const kept = await this.#keep(entry, stored, session, result);
          stateFuel += snapshotFuel(kept.stateBytes);
          return { result: namingItsStop(kept.result, timeoutMs, this.#capNames), maxLength };
        } finally {
          await this.#settle(tenant, reserved, fuel + stateFuel);
        }
      } catch (bug) {
        // The realm may be ahead of the store: the next turn restores the stored state.
        session.close();
        delete entry.session;
        delete entry.stored;
        throw bug;
      } finally {
        done();
        this.#trim();
      }
    })();
    return { answer };
  }

  /**
   * The stored state is the session's state between turns, so a fork is a copy of its record under a new id, made in
   * the session's turn; its realm is restored at its first cell (which reseeds its random streams). The copy's bytes
   * are charged to the tenant's share before they are copied.
   */
  async fork(tenant: string, id: string): Promise<{ id: string }> {
    this.#refuseWhenStopping();
    const entry = await this.#entry(tenant, id);
    this.#refuseWhenBusy(entry);
    const release = await entry.turns.take();
    try {
      const info = entry.deleted ? undefined : await this.#store.info(tenant, id);
      if (info === undefined) throw notFound(id);
      return await this.#charged(tenant, snapshotFuel(info.bytes), async () => {
        const found = await this.#store.get(tenant, id);
        if (found === undefined) throw notFound(id);
        const { name: _name, ...parent } = found;
        const now = this.#now();
        const forked = await this.#asTenant(tenant, async () => {
          await this.#roomFor(tenant, parent.bytes, 0, true);
          const copy = { ...parent, id: await this.#newId(tenant), createdAt: now, lastUsedAt: now };
          await this.#store.put(copy);
          return { id: copy.id };
        });
        return { value: forked, used: snapshotFuel(parent.bytes) };
      });
    } finally {
      release();
    }
  }

  async list(tenant: string, page: { cursor?: string; limit?: number } = {}): Promise<SessionPage> {
    const { cursor, limit = DEFAULT_PAGE } = page;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
      throw new HostError("invalid_request", `'limit' must be an integer from 1 to ${MAX_PAGE}`);
    }
    if (cursor !== undefined && !SESSION_ID_PATTERN.test(cursor)) {
      throw new HostError("invalid_request", "'cursor' must be the 'next' of the page before");
    }
    const sessions = await this.#store.list(tenant, { ...(cursor === undefined ? {} : { after: cursor }), limit });
    const last = sessions.at(-1);
    return { sessions, next: sessions.length === limit && last !== undefined ? last.id : null };
  }

  async get(tenant: string, id: string): Promise<SessionInfo> {
    const info = SESSION_ID_PATTERN.test(id) ? await this.#store.info(tenant, id) : undefined;
    if (info === undefined) throw notFound(id);
    return info;
  }

  /** Marked deleted at once: the running cell ends, and cells waiting for their turn find no session (404). */
  async delete(tenant: string, id: string): Promise<void> {
    const entry = await this.#entry(tenant, id);
    entry.deleted = true;
    entry.stop?.("The session was deleted");
    const release = await entry.turns.take();
    let deleted: boolean;
    try {
      deleted = await this.#asTenant(tenant, () => this.#store.delete(tenant, id));
    } catch (error) {
      // Still stored: still there.
      entry.deleted = false;
      throw error;
    } finally {
      release();
    }
    this.#drop(entry);
    // Another delete of it came first.
    if (!deleted) throw notFound(id);
  }

  /**
   * Deletes the sessions unused for longer than the idle TTL (`limits.idleMs`), a batch at a time until none is
   * left; answers how many it deleted. A session used while the sweep waited for its turn is kept.
   */
  async sweepIdle(): Promise<number> {
    let deleted = 0;
    for (;;) {
      const before = this.#now() - this.#limits.idleMs;
      const idle = await this.#store.expired(before, SWEEP_BATCH);
      for (const { tenant, id } of idle) {
        const entry = this.#entryOf(tenant, id);
        const release = await entry.turns.take();
        try {
          const info = entry.deleted ? undefined : await this.#store.info(tenant, id);
          if (info === undefined || info.lastUsedAt >= before) continue;
          entry.deleted = true;
          await this.#asTenant(tenant, () => this.#store.delete(tenant, id));
          this.#drop(entry);
          deleted++;
        } finally {
          release();
        }
      }
      if (idle.length < SWEEP_BATCH) {
        this.#trim();
        return deleted;
      }
    }
  }

  /**
   * Refuses new work (503 `overloaded`), ends the running cells (`reason`), waits for every turn to finish (each
   * cell's state is stored as it ends) and closes the live sessions: everything they held is in the store.
   */
  async stop(reason = "The host is stopping"): Promise<void> {
    this.#stopping = true;
    const turns: Promise<void>[] = [];
    for (const entry of this.#entries.values()) {
      entry.stop?.(reason);
      turns.push(entry.turns.take().then((release) => release()));
    }
    await Promise.all(turns);
    for (const entry of this.#entries.values()) entry.session?.close();
    this.#entries.clear();
  }

  /**
   * `work` charged to `tenant`'s share of CPU: `fuel` reserved before it starts (refused with 429 when the share cannot
   * pay), what it says it `used` settled after, all of the reservation when it throws.
   */
  async #charged<T>(tenant: string, fuel: number, work: () => Promise<{ value: T; used: number }>): Promise<T> {
    const reserved = this.#cpu === undefined ? 0 : await this.#cpu.budget.reserve(tenant, fuel);
    let used = reserved;
    try {
      const done = await work();
      used = done.used;
      return done.value;
    } finally {
      await this.#settle(tenant, reserved, used);
    }
  }

  /** Settles a cell's reservation; a lost settlement leaves it spent: the tenant waits longer, nobody else does. */
  async #settle(tenant: string, reserved: number, used: number): Promise<void> {
    await this.#cpu?.budget.settle(tenant, reserved, used).catch(() => {});
  }

  #refuseWhenBusy(entry: Entry): void {
    if (entry.turns.waiting >= MAX_WAITING_CELLS) {
      throw retryLater("session_busy", `Session ${entry.id} has ${MAX_WAITING_CELLS} cells waiting: retry shortly`, 1);
    }
  }

  /** A new id for `tenant`, in its turn of writes. */
  async #newId(tenant: string): Promise<string> {
    let id = newSessionId();
    while ((await this.#store.info(tenant, id)) !== undefined) id = newSessionId();
    return id;
  }

  #refuseWhenStopping(): void {
    if (this.#stopping) throw retryLater("overloaded", "The host is stopping: it takes no more session work", 1);
  }

  /**
   * Creates a session for `tenant` in its turn: checks the quotas against its first snapshot, then stores it. Its
   * realm's boot is charged to the tenant's share before it starts, and its first snapshot after.
   */
  async #createLocked(tenant: string, options: SessionRequestOptions, name: string | undefined): Promise<string> {
    await this.#roomFor(tenant, 0, 0, true);
    return this.#charged(tenant, realmFuel(0), async () => {
      const { id, snapshotBytes } = await this.#createStored(tenant, options, name);
      return { value: id, used: realmFuel(0) + snapshotFuel(snapshotBytes) };
    });
  }

  /** {@link #createLocked}'s work: the new session's id, and the bytes of the snapshot it stored. */
  async #createStored(
    tenant: string,
    options: SessionRequestOptions,
    name: string | undefined,
  ): Promise<{ id: string; snapshotBytes: number }> {
    const id = await this.#newId(tenant);
    const entry = this.#entryOf(tenant, id);
    // Held until the session is stored, so no trim drops the entry and no turn of it starts before.
    const release = await entry.turns.take();
    try {
      const session = await this.#engineCall(() => this.#engine.create(this.#engineOptions(entry, options)));
      entry.session = session;
      const snapshot = await session.snapshot();
      const now = this.#now();
      const stored: StoredSession = {
        tenant,
        id,
        ...(name === undefined ? {} : { name }),
        options,
        createdAt: now,
        lastUsedAt: now,
        cells: session.cells,
        bytes: bytesOf(snapshot, options),
        snapshot,
      };
      await this.#roomFor(tenant, stored.bytes, 0, true);
      await this.#store.put(stored);
      const { snapshot: _snapshot, ...fields } = stored;
      entry.stored = fields;
      return { id, snapshotBytes: snapshot.byteLength };
    } catch (error) {
      this.#drop(entry);
      throw error;
    } finally {
      release();
    }
  }

  /**
   * Stores the state `session` reached with `result`, or, when it would pass the tenant's storage, goes back to the
   * stored state and answers the cell as a `SessionStorageFull` error (see the module's header).
   */
  async #keep(
    entry: Entry,
    stored: Stored,
    session: EngineSession,
    result: CodeExecutionResult,
  ): Promise<{ result: CodeExecutionResult; stateBytes: number }> {
    const { tenant } = entry;
    if (entry.deleted) return { result, stateBytes: 0 };
    if (session.closed) {
      // The realm was lost during the cell (its thread died): the stored state stays, and the next turn restores it.
      delete entry.session;
      delete entry.stored;
      return { result, stateBytes: 0 };
    }
    const snapshot = await session.snapshot();
    const stateBytes = snapshot.length;
    const kept: StoredSession = {
      ...stored,
      lastUsedAt: this.#now(),
      cells: session.cells,
      bytes: bytesOf(snapshot, stored.options),
      snapshot,
    };
    // Past the quota, or a store with no room (507 `storage_full`): the cell is answered, its state not kept.
    const refusal = await this.#asTenant(tenant, async () => {
      try {
        await this.#roomFor(tenant, kept.bytes, stored.bytes, false);
        await this.#store.put(kept);
        const { snapshot: _snapshot, ...fields } = kept;
        entry.stored = fields;
        return undefined;
      } catch (error) {
        if (isHostError(error) && (error.code === "session_storage_full" || error.code === "storage_full")) {
          return error;
        }
        throw error;
      }
    });
    if (refusal === undefined) return { result, stateBytes };
    // The live realm is ahead of the stored state: close it, and the next turn restores the stored one.
    session.close();
    delete entry.session;
    delete entry.stored;
    const { result: _value, ...answered } = result;
    const refused = {
      ...answered,
      status: "error" as const,
      error: { name: "SessionStorageFull", message: `${refusal.message}: the cell's effects were undone` },
    };
    return { result: refused, stateBytes };
  }

  /** Throws when `tenant` has no room for a session of `bytes` (replacing one of `replaced` bytes, or a new one). */
  async #roomFor(tenant: string, bytes: number, replaced: number, isNew: boolean): Promise<void> {
    const usage = await this.#store.usage(tenant);
    // A new session is not in the store: all of the tenant's are others.
    checkRoom({ count: usage.count, bytes: usage.bytes - replaced }, bytes, isNew, this.#limits);
  }

  /** Counts one cell against `tenant`'s rate. */
  #takeCell(tenant: string): void {
    const { cellsPerMinute } = this.#limits;
    const { bucket, retryAfterSeconds } = takeToken(this.#cellBuckets.get(tenant), cellsPerMinute, this.#now());
    this.#cellBuckets.set(tenant, bucket);
    if (retryAfterSeconds !== null) {
      throw retryLater(
        "rate_limited",
        `This tenant may start ${cellsPerMinute} session cells per minute: retry in ${Math.max(1, Math.ceil(retryAfterSeconds))} s`,
        retryAfterSeconds,
      );
    }
  }

  /** The tenant's session `id`: 404 for an unknown or foreign one, alike. */
  async #entry(tenant: string, id: string): Promise<Entry> {
    if (!SESSION_ID_PATTERN.test(id)) throw notFound(id);
    const known = this.#entries.get(keyOf(tenant, id));
    // One being deleted is gone already: a cell let in now would store it again after the delete.
    if (known !== undefined) {
      if (known.deleted) throw notFound(id);
      return known;
    }
    if ((await this.#store.info(tenant, id)) === undefined) throw notFound(id);
    return this.#entryOf(tenant, id);
  }

  #entryOf(tenant: string, id: string): Entry {
    const key = keyOf(tenant, id);
    let entry = this.#entries.get(key);
    if (entry === undefined || entry.deleted) {
      entry = { tenant, id, turns: new Turns(), deleted: false };
      this.#entries.set(key, entry);
    }
    return entry;
  }

  /**
   * In `entry`'s turn: its stored fields and its realm, restored from the store unless it is live (`restored`: the
   * fuel of that restore, see {@link realmFuel}, or 0).
   */
  async #live(entry: Entry): Promise<{ stored: Stored; session: EngineSession; restored: number }> {
    const { tenant, id } = entry;
    if (entry.deleted) throw notFound(id);
    // Most recently used last.
    this.#entries.delete(keyOf(tenant, id));
    this.#entries.set(keyOf(tenant, id), entry);
    // A realm lost with its thread comes back from the store, as an evicted one does.
    if (entry.session !== undefined && entry.stored !== undefined && !entry.session.closed) {
      return { stored: entry.stored, session: entry.session, restored: 0 };
    }
    const found = await this.#store.get(tenant, id);
    if (found === undefined) throw notFound(id);
    const { snapshot, ...stored } = found;
    const options = this.#engineOptions(entry, stored.options);
    const session = await this.#engineCall(() => this.#engine.restore(snapshot, options), id);
    entry.session = session;
    entry.stored = stored;
    return { stored, session, restored: realmFuel(snapshot.length) };
  }

  /** Closes `entry`'s realm and forgets it (unless another entry of its id took its place meanwhile). */
  #drop(entry: Entry): void {
    entry.session?.close();
    delete entry.session;
    delete entry.stored;
    const key = keyOf(entry.tenant, entry.id);
    if (this.#entries.get(key) === entry) this.#entries.delete(key);
  }

  /**
   * While the live sessions pass the count or the bytes, closes an idle one of the tenant that holds the most of what
   * is passed (sessions, or bytes), its least recently used: a tenant's many sessions make its own go back to storage,
   * not another tenant's, whose next cells would pay for restoring them.
   */
  #trim(): void {
    const held = new Map<string, { live: number; bytes: number }>();
    let live = 0;
    let bytes = 0;
    for (const [key, entry] of this.#entries) {
      if (entry.session === undefined) {
        if (entry.turns.idle) this.#entries.delete(key);
        continue;
      }
      const tenant = held.get(entry.tenant) ?? { live: 0, bytes: 0 };
      tenant.live++;
      tenant.bytes += entry.session.memoryBytes;
      held.set(entry.tenant, tenant);
      live++;
      bytes += entry.session.memoryBytes;
    }
    while (live > this.#maxLive || bytes > this.#maxLiveBytes) {
      const byBytes = live <= this.#maxLive;
      let victim: [string, Entry] | undefined;
      let most = -1;
      for (const [key, entry] of this.#entries) {
        if (entry.session === undefined || !entry.turns.idle) continue;
        const tenant = held.get(entry.tenant) as { live: number; bytes: number };
        const holds = byBytes ? tenant.bytes : tenant.live;
        // Least recently used first: a later entry of the same tenant never wins.
        if (holds > most) [victim, most] = [[key, entry], holds];
      }
      if (victim === undefined) return;
      const [key, entry] = victim;
      const session = entry.session as EngineSession;
      const tenant = held.get(entry.tenant) as { live: number; bytes: number };
      tenant.live--;
      tenant.bytes -= session.memoryBytes;
      live--;
      bytes -= session.memoryBytes;
      session.close();
      this.#entries.delete(key);
    }
  }

  /** `work` in `tenant`'s turn of writes. */
  async #asTenant<T>(tenant: string, work: () => Promise<T>): Promise<T> {
    let turns = this.#tenantTurns.get(tenant);
    if (turns === undefined) {
      turns = new Turns();
      this.#tenantTurns.set(tenant, turns);
    }
    const release = await turns.take();
    try {
      return await work();
    } finally {
      release();
      if (turns.waiting === 0) this.#tenantTurns.delete(tenant);
    }
  }

  /**
   * What `entry`'s realm is made with. The tenant's tool modules are functions that call the current cell's scope
   * (`entry.tools`, made anew for each cell): a realm keeps the functions it was given, and budgets per run hold per cell.
   */
  #engineOptions(entry: Entry, options: SessionRequestOptions): EngineSessionOptions {
    const { memoryLimitBytes, modules, globals, imports } = options;
    const tools: Record<string, Record<string, unknown>> = {};
    for (const [service, functions] of Object.entries(this.#tools?.modules(entry.tenant) ?? {})) {
      tools[service] = Object.fromEntries(
        Object.keys(functions).map((tool) => [
          tool,
          (parameters: Record<string, unknown>) => {
            const current = entry.tools?.[service]?.[tool];
            if (current === undefined) throw new Error(`${service}.${tool} is called outside a cell`);
            return current(parameters);
          },
        ]),
      );
    }
    for (const name of Object.keys(imports ?? {})) {
      if (name in tools) throw new HostError("invalid_options", `'imports' may not name the host's module '${name}'`);
    }
    return {
      tenant: entry.tenant,
      // Always given: a restore takes a snapshot's own limit only up to the engine's default, which may change.
      memoryLimitBytes: memoryLimitBytes ?? this.#defaultMemory,
      ...(modules === undefined ? {} : { modules }),
      ...(globals === undefined ? {} : { globals: fromWire(globals as JsonValue) as Record<string, unknown> }),
      imports: {
        ...tools,
        ...Object.fromEntries(
          Object.entries(imports ?? {}).map(([name, values]) => [
            name,
            fromWire(values as JsonValue) as Record<string, unknown>,
          ]),
        ),
      },
    };
  }

  /** `make`'s session, its failure a `HostError` (the engine's refusal of options or of a snapshot). */
  async #engineCall(make: () => Promise<EngineSession>, restoring?: string): Promise<EngineSession> {
    try {
      return await make();
    } catch (error) {
      if (isHostError(error)) throw error;
      const { message } = error as Error;
      throw restoring === undefined
        ? new HostError("invalid_options", message)
        : new HostError("internal", `Session ${restoring} could not be restored: ${message}`);
    }
  }
}

const keyOf = (tenant: string, id: string) => `${id}:${tenant}`;

/**
 * Fuel of a realm the service makes for a session (created, or restored from a snapshot of `bytes`): an instance of
 * its own, booted for it (a session never gives its instance back to the pool), and the snapshot decoded into it.
 */
const realmFuel = (bytes: number) => INSTANCE_BOOT_FUEL + snapshotFuel(bytes);

/** Bytes a session takes in storage: its snapshot and its options' JSON. */
const bytesOf = (snapshot: Uint8Array, options: SessionRequestOptions) =>
  snapshot.byteLength + utf8Length(JSON.stringify(options));

/**
 * `options` checked against the host's caps, their wire values decodable: a 400 naming what is wrong, or a 413 for
 * modules past `MAX_CODE_BYTES`. What the engine itself refuses is left to it (400 `invalid_options`).
 */
function checkedOptions(options: SessionRequestOptions): SessionRequestOptions {
  const invalid = (message: string) => new HostError("invalid_request", message);
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw invalid("'options' must be an object");
  }
  const known = ["memoryLimitBytes", "modules", "globals", "imports"];
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw invalid(`Unknown option '${key}': a session takes ${known.join(", ")}`);
  }
  const { memoryLimitBytes, modules, globals, imports } = options;
  if (
    memoryLimitBytes !== undefined &&
    (!Number.isInteger(memoryLimitBytes) || memoryLimitBytes < 1 || memoryLimitBytes > MAX_RUN_MEMORY_BYTES)
  ) {
    throw invalid(`'memoryLimitBytes' must be an integer from 1 to ${MAX_RUN_MEMORY_BYTES}`);
  }
  const sources = Object.values(modules ?? {});
  if (sources.some((source) => typeof source !== "string")) throw invalid("'modules' must map names to source text");
  const tooLarge = codeTooLarge("The modules", sources);
  if (tooLarge !== undefined) throw tooLarge;
  try {
    if (globals !== undefined) fromWire(globals as JsonValue);
    for (const values of Object.values(imports ?? {})) fromWire(values as JsonValue);
  } catch (error) {
    throw invalid(`A wire-encoded value is malformed: ${(error as Error).message}`);
  }
  // As stored: JSON (absent and undefined fields alike).
  return JSON.parse(JSON.stringify(options)) as SessionRequestOptions;
}
