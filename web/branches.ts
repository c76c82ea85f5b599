/**
 * The session mode's state on the page (runtime sessions, not the editor's `Session` of `session.ts`): the
 * branches, "main" and its forks, each a session in the sandbox worker, with the snapshot its last cell left and
 * its transcript. A Run is a cell of the selected branch. A cell that holds the worker's thread can only be stopped
 * by terminating the worker; every branch is then brought back into the fresh worker from its snapshot.
 * @module
 */
import type { CellPayload, SessionSettings } from "./messages.js";
import type { BrowserOutcome, SandboxRunner } from "./runner.js";

/** One line of a branch's transcript: a cell and how it ended, or where the branch was forked. */
export type TranscriptEntry =
  | {
      kind: "cell";
      source: string;
      outcome: BrowserOutcome;
      /** The cell held the thread when stopped: the session is as it was before the cell. */
      rolledBack: boolean;
    }
  | { kind: "fork"; from: string };

interface Branch {
  readonly name: string;
  /** The worker's session; none until a Run or a Fork makes it, with the page's settings then. */
  id: string | undefined;
  settings: SessionSettings | undefined;
  /** The state its last cell left (none before its first cell): what a hard stop brings it back to. */
  snapshot: Uint8Array | undefined;
  transcript: TranscriptEntry[];
}

/**
 * How long a Stop waits for the worker to answer that it ended the cell before terminating the worker: a worker
 * whose cell waits on a timer or a host function answers at once; one whose cell runs synchronously never can.
 */
const SOFT_STOP_MS = 300;

const STOP_REASON = "Stopped by the user";

const newBranch = (name: string): Branch => ({
  name,
  id: undefined,
  settings: undefined,
  snapshot: undefined,
  transcript: [],
});

/** The branches of the session mode and the requests that make, run, fork, reset and stop them. */
export class SessionBranches {
  branches: Branch[] = [newBranch("main")];
  /** The index of the branch Run, Fork and Reset act on. */
  selected = 0;
  #forks = 0;
  #ids = 0;
  #cell: Promise<BrowserOutcome> | undefined;
  #rolledBack = false;

  constructor(
    private readonly runner: SandboxRunner,
    private readonly softStopMs = SOFT_STOP_MS,
  ) {}

  get current(): Branch {
    return this.branches[this.selected] as Branch;
  }

  /** Makes `branch`'s session with `settings` if it has none yet. */
  async #make(branch: Branch, settings: SessionSettings): Promise<BrowserOutcome | undefined> {
    if (branch.id !== undefined) return undefined;
    const id = String(++this.#ids);
    const made = await this.runner.make({ type: "open", session: id, settings });
    if (made.kind === "rejected") return made;
    branch.id = id;
    branch.settings = settings;
    return undefined;
  }

  /**
   * Runs `cell` in the selected branch (made first with `settings` when new) and adds it to its transcript;
   * `onReport` sees its reports as they happen.
   */
  async run(
    { settings, cell }: { settings: SessionSettings; cell: CellPayload },
    onReport?: (value: unknown, index: number) => void,
  ): Promise<BrowserOutcome> {
    const branch = this.current;
    const refused = await this.#make(branch, settings);
    if (refused !== undefined) return refused;
    this.#rolledBack = false;
    const { outcome: settled, snapshot } = this.runner.cell(branch.id as string, cell, onReport);
    // It comes before any later request of this session is answered (the worker's session queues them behind it).
    void snapshot.then((bytes) => {
      if (bytes !== undefined) branch.snapshot = bytes;
    });
    this.#cell = settled;
    const outcome = await settled;
    this.#cell = undefined;
    branch.transcript.push({ kind: "cell", source: cell.source, outcome, rolledBack: this.#rolledBack });
    return outcome;
  }

  /**
   * Makes a fork of the selected branch (made first with `settings` when new) and selects it; a refusal is
   * returned, and nothing changes.
   */
  async fork(settings: SessionSettings): Promise<BrowserOutcome | undefined> {
    const parent = this.current;
    const refused = await this.#make(parent, settings);
    if (refused !== undefined) return refused;
    const id = String(++this.#ids);
    const made = await this.runner.make({ type: "fork", session: id, from: parent.id as string });
    if (made.kind === "rejected") return made;
    this.branches.push({
      name: `fork ${++this.#forks}`,
      id,
      settings: parent.settings,
      snapshot: parent.snapshot,
      transcript: [...parent.transcript, { kind: "fork", from: parent.name }],
    });
    this.selected = this.branches.length - 1;
    return undefined;
  }

  /** Closes the selected branch's session; the next Run makes a new empty one with the settings then. */
  reset(): void {
    const branch = this.current;
    if (branch.id !== undefined) this.runner.close(branch.id);
    this.branches[this.selected] = newBranch(branch.name);
  }

  /** Closes every branch's session: back to one new "main". */
  closeAll(): void {
    for (const { id } of this.branches) if (id !== undefined) this.runner.close(id);
    this.branches = [newBranch("main")];
    this.selected = 0;
    this.#forks = 0;
  }

  /**
   * Stops the cell going on. The worker ends it if it can (`"soft"`: the session keeps what the cell did);
   * else the worker is terminated and every branch brought back from its snapshot into the fresh one (`"hard"`:
   * the stopped cell's branch is as before the cell). Branches that cannot be brought back are reset and named.
   */
  async stop(): Promise<{ how: "soft" | "hard" | "idle"; lost: string[] }> {
    const cell = this.#cell;
    if (cell === undefined) return { how: "idle", lost: [] };
    let timer: ReturnType<typeof setTimeout> | undefined;
    const answered = await Promise.race([
      this.runner.stopCell().then(() => true),
      cell.then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(resolve, this.softStopMs, false))),
    ]);
    clearTimeout(timer);
    if (answered) {
      await cell;
      return { how: "soft", lost: [] };
    }
    this.#rolledBack = true;
    this.runner.stop(STOP_REASON);
    await cell;
    return { how: "hard", lost: await this.#bringBack() };
  }

  /** Opens every made branch in the (fresh) worker in the state of its snapshot; the names of those that failed. */
  async #bringBack(): Promise<string[]> {
    const lost: string[] = [];
    for (const [index, branch] of this.branches.entries()) {
      if (branch.id === undefined || branch.settings === undefined) continue;
      const { id, settings, snapshot } = branch;
      const made = await this.runner.make({
        type: "open",
        session: id,
        settings,
        ...(snapshot !== undefined && { snapshot }),
      });
      if (made.kind === "opened") continue;
      lost.push(`${branch.name} (${made.name}: ${made.message})`);
      this.branches[index] = newBranch(branch.name);
    }
    return lost;
  }
}
