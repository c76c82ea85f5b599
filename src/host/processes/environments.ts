/**
 * Environment activation (docs/environment.md: activation and draining): at most one environment is active and gets
 * new executions. Activating another moves the previous one to draining: it keeps its in-flight executions (and
 * their kills) and is torn down once the last of them has resolved.
 * @module
 */
import type {
  EnvironmentBindings,
  EnvironmentModule,
  ExecutionExitState,
  ExecutionInput,
  ModuleSetupContext,
  ToolDocsInput,
} from "../../environment/types.js";
import { HostError } from "../errors.js";

interface Slot {
  name: string;
  module: EnvironmentModule;
  state: "active" | "draining" | "torn down";
  inflight: Set<number>;
}

export class Environments {
  readonly #bindings: EnvironmentBindings;
  readonly #slots: Slot[] = [];
  readonly #owner = new Map<number, Slot>();
  #active: Slot | undefined;
  #activation: Promise<void> = Promise.resolve();
  readonly #teardowns = new Set<Promise<void>>();
  #onError: (error: unknown) => void;

  constructor(bindings: EnvironmentBindings, onError: (error: unknown) => void = () => {}) {
    this.#bindings = bindings;
    this.#onError = onError;
  }

  /**
   * Sets `module` up with the host's bindings and makes it the active environment; the previous one drains. If
   * setup fails, the previous one stays active and this rejects.
   */
  activate(name: string, module: EnvironmentModule, context: Partial<ModuleSetupContext> = {}): Promise<void> {
    const next = this.#activation.then(async () => {
      await module.setup({ config: context.config ?? {}, secrets: context.secrets ?? {}, bindings: this.#bindings });
      const slot: Slot = { name, module, state: "active", inflight: new Set() };
      const previous = this.#active;
      this.#active = slot;
      this.#slots.push(slot);
      if (previous !== undefined) {
        previous.state = "draining";
        this.#maybeTearDown(previous);
      }
    });
    this.#activation = next.catch(() => {});
    return next;
  }

  /** Name of the active environment. */
  get active(): string | undefined {
    return this.#active?.name;
  }

  /** Names of the environments that still finish in-flight executions. */
  get draining(): string[] {
    return this.#slots.filter((s) => s.state === "draining").map((s) => s.name);
  }

  /** Runs on the active environment; the execution stays with it even if it starts draining. */
  async execute(input: ExecutionInput): Promise<ExecutionExitState> {
    const slot = this.#active;
    if (slot === undefined) throw new HostError("no_environment", "No environment is active");
    slot.inflight.add(input.eid);
    this.#owner.set(input.eid, slot);
    try {
      return await slot.module.execute(input);
    } finally {
      slot.inflight.delete(input.eid);
      this.#owner.delete(input.eid);
      this.#maybeTearDown(slot);
    }
  }

  /** Forwards a kill to the environment that runs `eid` (active or draining); unknown eids are ignored. */
  async kill(eid: number): Promise<void> {
    await this.#owner.get(eid)?.module.kill(eid);
  }

  async docs(): Promise<string> {
    return this.#require().generateDocs();
  }

  async toolDocs(input: ToolDocsInput): Promise<string> {
    return this.#require().generateToolDocs(input);
  }

  /** Resolves when every teardown started so far has finished. */
  async drained(): Promise<void> {
    await Promise.all(this.#teardowns);
  }

  /** Tears every environment down (each cancels what it has in flight); nothing is active afterwards. */
  async close(): Promise<void> {
    await this.#activation;
    this.#active = undefined;
    for (const slot of [...this.#slots]) this.#tearDown(slot);
    await this.drained();
  }

  #require(): EnvironmentModule {
    if (this.#active === undefined) throw new HostError("no_environment", "No environment is active");
    return this.#active.module;
  }

  #maybeTearDown(slot: Slot): void {
    if (slot.state === "draining" && slot.inflight.size === 0) this.#tearDown(slot);
  }

  #tearDown(slot: Slot): void {
    slot.state = "torn down";
    this.#slots.splice(this.#slots.indexOf(slot), 1);
    const done: Promise<void> = slot.module
      .teardown()
      .catch(this.#onError)
      .finally(() => this.#teardowns.delete(done));
    this.#teardowns.add(done);
  }
}
