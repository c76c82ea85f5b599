/**
 * The session routes' backend on the edge: each session in a `SessionObject` of its own, reached over RPC, and the
 * registry's rows of sessions (session-index.ts) for whose an id is, names, listing and each tenant's cells per
 * minute. An unknown or another tenant's id is 404 from the registry alone: it reaches (and creates) no object.
 * @module
 */
import { HostError } from "../src/host/errors.js";
import type { RunAnswer } from "../src/host/runs/run-once.js";
import {
  SESSION_ID_PATTERN,
  type SessionBackend,
  type SessionInfo,
  type SessionPage,
} from "../src/host/sessions/backend.js";
import type { SessionLimits } from "../src/host/sessions/limits.js";
import { unwrap } from "./rpc-refusals.js";

/** Sessions one page holds when the caller names no limit, and the most it may name (as the `SessionService`'s). */
const DEFAULT_PAGE = 100;
const MAX_PAGE = 1000;

const notFound = (id: string) => new HostError("not_found", `No session ${JSON.stringify(id.slice(0, 40))}`);

export function edgeSessions(env: Env, limits: SessionLimits): SessionBackend {
  const registry = () => env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
  const newObject = () => env.SESSIONS.get(env.SESSIONS.newUniqueId());
  /** The tenant's session `id` as the registry has it; 404 for an unknown or foreign one alike. */
  const entryOf = async (tenant: string, id: string) => {
    const entry = SESSION_ID_PATTERN.test(id) ? await registry().sessionEntry(tenant, id) : null;
    if (entry === null) throw notFound(id);
    return entry;
  };
  const objectOf = async (tenant: string, id: string) =>
    env.SESSIONS.get(env.SESSIONS.idFromString((await entryOf(tenant, id)).object));

  return {
    create: async (tenant, input) => unwrap(await newObject().create(tenant, input)),

    async open(tenant, name, options) {
      const named = async () => {
        const id = await registry().sessionNamed(tenant, name);
        return id === null ? undefined : { id, created: false };
      };
      const found = await named();
      if (found !== undefined) return found;
      const opened = await newObject().open(tenant, name, options);
      // Opened at once elsewhere, its name reached the registry first: that session is the one of the name.
      if ("error" in opened && opened.error.code === "invalid_request") return (await named()) ?? unwrap(opened);
      return unwrap(opened);
    },

    async run(tenant, id, cell, caller = {}) {
      const entry = SESSION_ID_PATTERN.test(id)
        ? unwrap(await registry().admitCell(tenant, id, limits.cellsPerMinute))
        : null;
      if (entry === null) throw notFound(id);
      const object = env.SESSIONS.get(env.SESSIONS.idFromString(entry.object));
      const call = crypto.randomUUID();
      let started!: () => void;
      const admitted = new Promise<null>((resolve) => {
        started = () => resolve(null);
      });
      const { signal, onEvent } = caller;
      const answered = object.run(tenant, id, cell, call, {
        started,
        ...(onEvent !== undefined && { onEvent }),
      });
      const stop = () => void object.stop(call).catch(() => {});
      signal?.addEventListener("abort", stop, { once: true });
      if (signal?.aborted) stop();
      const answer = answered
        .then((done): RunAnswer => unwrap(done) as RunAnswer)
        .finally(() => signal?.removeEventListener("abort", stop));
      // Refused, the answer comes without `started`: thrown here as the `HostError` it was, having run nothing.
      await Promise.race([admitted, answer]);
      return { answer };
    },

    fork: async (tenant, id) => unwrap(await (await objectOf(tenant, id)).fork(tenant, id)),

    async list(tenant, page = {}): Promise<SessionPage> {
      const { cursor, limit = DEFAULT_PAGE } = page;
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
        throw new HostError("invalid_request", `'limit' must be an integer from 1 to ${MAX_PAGE}`);
      }
      if (cursor !== undefined && !SESSION_ID_PATTERN.test(cursor)) {
        throw new HostError("invalid_request", "'cursor' must be the 'next' of the page before");
      }
      const sessions = await registry().listSessions(tenant, cursor ?? "", limit);
      const last = sessions.at(-1);
      return { sessions, next: sessions.length === limit && last !== undefined ? last.id : null };
    },

    get: async (tenant, id): Promise<SessionInfo> => (await entryOf(tenant, id)).info,

    async delete(tenant, id) {
      unwrap(await (await objectOf(tenant, id)).delete(tenant, id));
    },
  };
}
