/**
 * The sessions of one MCP connection kept in its process (`runcode mcp` over stdio): `run_code`'s `session` names
 * one, made on first use with the connection's sandbox settings and tools. A connection keeps at most
 * {@link MAX_CONNECTION_SESSIONS}: a new name closes the least recently used session running no cell, and is refused
 * when every one is running a cell. Each cell is checked as `run_code`'s runs are (the code's size, `timeoutMs`), and
 * stopped when its call is cancelled; its console entries and reports reach the caller as a run's do. All of them
 * end with the connection (`close`).
 * @module
 */

import { MAX_QUEUED_CELLS } from "../../core/session.js";
import { ANONYMOUS_TENANT, type ToolRegistry } from "../../tools/registry.js";
import { HostError } from "../errors.js";
import { codeTooLarge, timeoutWithin } from "../limits.js";
import { eventsWithin, namingItsStop } from "../runs/run-once.js";
import type { EngineSession, SessionEngine } from "../sessions/engine.js";
import type { SessionCellToAnswer } from "./server.js";

/** Sessions one connection keeps at once. */
export const MAX_CONNECTION_SESSIONS = 16;

interface Entry {
  /** The session, once made. */
  session: Promise<EngineSession>;
  /** Gives the next cell's tool calls a scope of their own. */
  nextCell: () => void;
  /** Cells of it running or waiting their turn: it is not closed to make room while any are. */
  cells: number;
  /** Settles when the last cell given to it has ended: cells run one after another. */
  last: Promise<unknown>;
}

interface ConnectionSessionsOptions {
  /** Makes sessions with the connection's sandbox settings (its Web APIs, `fetch`). */
  engine: SessionEngine;
  /** Services cells may import, as a run's. */
  tools?: ToolRegistry;
  /** Characters of wire JSON a cell's answer may take: the sessions' heap limit, as a run's. */
  maxLength: number;
  /** Default {@link MAX_CONNECTION_SESSIONS}. */
  max?: number;
}

export class ConnectionSessions {
  /** By name, the least recently used first. */
  readonly #entries = new Map<string, Entry>();
  readonly #options: ConnectionSessionsOptions;
  #closed = false;

  constructor(options: ConnectionSessionsOptions) {
    this.#options = options;
  }

  /** `run_code`'s cells: the port `createMcpServer`'s `sessions` takes. */
  readonly run: SessionCellToAnswer = async (name, cell, caller) => {
    const { source, language, timeoutMs } = cell;
    const tooLarge = codeTooLarge("The cell", [source]);
    if (tooLarge !== undefined) throw tooLarge;
    const timeout = timeoutWithin(timeoutMs);
    const entry = this.#entry(name);
    if (entry.cells >= MAX_QUEUED_CELLS) {
      throw new HostError(
        "session_busy",
        `Session '${name}' has ${entry.cells} cells running or waiting: try again when they end`,
      );
    }
    entry.cells++;
    const { maxLength } = this.#options;
    const { signal, onEvent } = caller;
    const turn = entry.last.then(async () => {
      const session = await entry.session;
      entry.nextCell();
      return session.run(source, {
        timeoutMs: timeout,
        ...(language === undefined ? {} : { language }),
        ...(signal === undefined ? {} : { signal }),
        ...(onEvent === undefined ? {} : eventsWithin(maxLength, onEvent)),
      });
    });
    entry.last = turn.catch(() => {});
    try {
      return { result: namingItsStop(await turn, timeout), maxLength };
    } finally {
      entry.cells--;
    }
  };
  /** Closes every session; later cells are refused. */
  close(): void {
    this.#closed = true;
    for (const { session } of this.#entries.values())
      session.then(
        (s) => s.close(),
        () => {},
      );
    this.#entries.clear();
  }

  /** The session named `name`, made when there is none; now the most recently used. */
  #entry(name: string): Entry {
    if (this.#closed) throw new HostError("invalid_request", "The MCP connection is closed");
    const known = this.#entries.get(name);
    if (known !== undefined) {
      this.#entries.delete(name);
      this.#entries.set(name, known);
      return known;
    }
    const { max = MAX_CONNECTION_SESSIONS } = this.#options;
    if (this.#entries.size >= max) {
      const idle = [...this.#entries].find(([, entry]) => entry.cells === 0);
      if (idle === undefined) {
        throw new HostError(
          "too_many_sessions",
          `This connection keeps at most ${max} sessions and each is running a cell: try again when one ends`,
        );
      }
      this.#entries.delete(idle[0]);
      idle[1].session.then(
        (session) => session.close(),
        () => {},
      );
    }
    const { engine, tools } = this.#options;
    const { modules, nextCell } = tools?.sessionModules(ANONYMOUS_TENANT) ?? { modules: {}, nextCell: () => {} };
    const entry: Entry = {
      session: engine.create({ imports: modules, tenant: ANONYMOUS_TENANT }),
      nextCell,
      cells: 0,
      last: Promise.resolve(),
    };
    // A session that could not be made is forgotten: the next call with its name tries again.
    entry.session.catch(() => {
      if (this.#entries.get(name) === entry) this.#entries.delete(name);
    });
    this.#entries.set(name, entry);
    return entry;
  }
}
