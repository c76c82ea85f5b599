/**
 * Turns for the caller's thread between the runs attempted on it (in-thread-first.ts): one attempt holds it at a
 * time, and the next takes it after a turn of the event loop. Waiting attempts take turns by tenant
 * (`options.tenant`; runs without one are one tenant, the library's caller), round robin: each attempt gets a place
 * in its tenant's turns, one past the tenant's previous attempt's and never behind the attempt holding the thread, and
 * the earliest place goes next, the first come among ties. A tenant that queued many attempts so has its next one's
 * place far ahead, and another tenant's attempt, placed at the one holding the thread, comes next: one tenant's
 * backlog delays another's attempt by one attempt, not by the backlog. Each tenant's waiting attempts are at most
 * {@link MAX_WAITING_ATTEMPTS}.
 * @module
 */

/** Attempts of one tenant that may wait for the caller's thread; past them a run goes to a worker thread at once. */
export const MAX_WAITING_ATTEMPTS = 1_000;

/** What takes turns: started when its turn comes, it calls {@link AttemptTurns.next} once it is over. */
interface Attempt {
  attempt(): unknown;
}

/** An attempt waiting for its turn. */
interface Waiting<T> {
  attempt: T;
  /** Its place in the turns (see the module comment). */
  place: number;
  /** When it came, among all waiting attempts: the first come goes first among ties. */
  order: number;
}

/** The turns of one thread's attempts, as the module comment says. */
export class AttemptTurns<T extends Attempt> {
  /** The waiting attempts by tenant, each tenant's in the order it queued them (so in the order of their places). */
  readonly #lines = new Map<string | undefined, Waiting<T>[]>();
  /** The place of each tenant's next attempt, kept while it is ahead of {@link #serving}. */
  readonly #nextPlace = new Map<string | undefined, number>();
  /** The place of the attempt holding the thread (or the last that held it). */
  #serving = 0;
  /** Attempts queued so far. */
  #arrivals = 0;
  /** Whether an attempt holds the caller's thread, or the next is about to take it. */
  #busy = false;

  /** Whether `tenant` may queue another attempt. */
  hasRoom(tenant: string | undefined): boolean {
    return (this.#lines.get(tenant)?.length ?? 0) < MAX_WAITING_ATTEMPTS;
  }

  /** Starts `attempt` of `tenant` at once when nobody holds the thread, else queues it in its place. */
  take(tenant: string | undefined, attempt: T): void {
    const place = Math.max(this.#serving, this.#nextPlace.get(tenant) ?? 0);
    this.#nextPlace.set(tenant, place + 1);
    if (!this.#busy) {
      this.#busy = true;
      this.#serve(place);
      void attempt.attempt();
      return;
    }
    const line = this.#lines.get(tenant) ?? [];
    line.push({ attempt, place, order: this.#arrivals++ });
    this.#lines.set(tenant, line);
  }

  /** Takes `attempt` out of the turns; `false` when it was not waiting (it holds or held the thread). */
  leave(attempt: T): boolean {
    for (const [tenant, line] of this.#lines) {
      const at = line.findIndex((waiting) => waiting.attempt === attempt);
      if (at === -1) continue;
      line.splice(at, 1);
      if (line.length === 0) this.#lines.delete(tenant);
      return true;
    }
    return false;
  }

  /** Gives the caller's thread to the next attempt after a turn of its event loop (one stopped meanwhile is gone). */
  next(): void {
    this.#busy = this.#lines.size > 0;
    if (!this.#busy) return;
    setImmediate(() => {
      const attempt = this.#first();
      if (attempt === undefined) this.#busy = false;
      else void attempt.attempt();
    });
  }

  /** Takes the waiting attempt with the earliest place out of its line, and makes it the one served. */
  #first(): T | undefined {
    let first: Waiting<T> | undefined;
    let tenant: string | undefined;
    for (const [owner, [head]] of this.#lines) {
      if (head === undefined) continue;
      if (first === undefined || head.place < first.place || (head.place === first.place && head.order < first.order)) {
        first = head;
        tenant = owner;
      }
    }
    if (first === undefined) return undefined;
    const line = this.#lines.get(tenant) as Waiting<T>[];
    line.shift();
    if (line.length === 0) this.#lines.delete(tenant);
    this.#serve(first.place);
    return first.attempt;
  }

  /** Makes `place` the one served; a tenant's next place at or behind it would be it, so it need not be kept. */
  #serve(place: number): void {
    this.#serving = place;
    for (const [tenant, next] of this.#nextPlace) {
      if (next <= place) this.#nextPlace.delete(tenant);
    }
  }
}
