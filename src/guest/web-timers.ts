/**
 * The HTML timers of a sandbox made with `webApis: true`: `setTimeout`, `setInterval`, `clearTimeout`,
 * `clearInterval`. Shipped as source text (see core.ts).
 *
 * The guest keeps the timers; the host keeps their clock (src/timers.ts). The timer clock starts at 0 with every run
 * and moves only when the host fires timers, to the due time of the earliest: timers fire in the order of their due
 * times, and timers due at the same time in the order they were set. A delay below 1 ms counts as 1 ms, as in Node,
 * so every firing moves the clock. The host calls `nextTimer` and `fireTimer`: they touch nothing user code can change.
 * @module
 */
import type { HostCall } from "./core.js";
import type { WebKit } from "./web-kit.js";

interface Timer {
  id: number;
  due: number;
  /** Order among timers of the same due time. */
  seq: number;
  callback: (...args: unknown[]) => unknown;
  args: unknown[];
  /** 0 for a timeout; the period of an interval. */
  interval: number;
  keepsAlive: boolean;
  /** Index in the heap; -1 while it is not in it (an interval running its callback). */
  at: number;
}

export function guestWebTimers(_hostCall: HostCall, kit: WebKit): void {
  // biome-ignore lint/suspicious/noRedundantUseStrict: shipped as source text and evaluated as a sloppy script.
  "use strict";
  const MAX_PENDING_TIMERS = 10000;
  const G = globalThis;
  const { apply } = Reflect;
  const { defineProperty } = Object;
  const { max } = Math;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const EMPTY: unknown[] = [];

  // Active timers by id, with the Map's own methods: user changes to Map.prototype never reach them.
  const byId = new Map<number, Timer>();
  for (const key of ["get", "set", "delete"] as const) defineProperty(byId, key, { value: Map.prototype[key] });
  // A binary heap by (due, seq) in an object without a prototype: no user setter on an index reaches it.
  const heap = { __proto__: null } as unknown as Record<number, Timer>;
  let size = 0;
  let active = 0;
  let keepingAlive = 0;
  let now = 0;
  let nextId = 1;
  let nextSeq = 0;

  const before = (a: Timer, b: Timer) => a.due < b.due || (a.due === b.due && a.seq < b.seq);
  const place = (t: Timer, i: number) => {
    heap[i] = t;
    t.at = i;
  };
  const up = (t: Timer) => {
    let i = t.at;
    while (i > 0) {
      const parent = heap[(i - 1) >> 1] as Timer;
      if (!before(t, parent)) break;
      place(parent, i);
      i = (i - 1) >> 1;
    }
    place(t, i);
  };
  const down = (t: Timer) => {
    let i = t.at;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= size) break;
      if (child + 1 < size && before(heap[child + 1] as Timer, heap[child] as Timer)) child++;
      if (!before(heap[child] as Timer, t)) break;
      place(heap[child] as Timer, i);
      i = child;
    }
    place(t, i);
  };
  const push = (t: Timer) => {
    place(t, size++);
    up(t);
  };
  const unheap = (t: Timer) => {
    const i = t.at;
    t.at = -1;
    size--;
    const last = heap[size] as Timer;
    delete heap[size];
    if (last === t) return;
    place(last, i);
    up(last);
    down(last);
  };
  const forget = (t: Timer) => {
    byId.delete(t.id);
    active--;
    if (t.keepsAlive) keepingAlive--;
    if (t.at >= 0) unheap(t);
  };

  const schedule = (
    callback: Timer["callback"],
    delay: number,
    args: unknown[],
    repeat: boolean,
    keepsAlive: boolean,
  ) => {
    if (active >= MAX_PENDING_TIMERS) {
      throw new RangeErrorCtor(`${MAX_PENDING_TIMERS} timers are pending: clear some before setting more`);
    }
    const ms = max(1, delay);
    const id = nextId++;
    const timer: Timer = {
      __proto__: null,
      id,
      due: now + ms,
      seq: nextSeq++,
      callback,
      args,
      interval: repeat ? ms : 0,
      keepsAlive,
      at: -1,
    } as Timer;
    byId.set(id, timer);
    active++;
    if (keepsAlive) keepingAlive++;
    push(timer);
    return id;
  };
  /** The WebIDL arguments of setTimeout and setInterval: a function (code strings are never compiled) and a `long`. */
  const timerArgs = (what: string, handler: unknown, timeout: unknown) => {
    if (typeof handler !== "function") {
      throw new TypeErrorCtor(`${what}: the handler must be a function (the sandbox compiles no code from strings)`);
    }
    return (timeout as number) | 0;
  };

  const clear = (id: unknown) => {
    const timer = byId.get((id as number) | 0);
    if (timer !== undefined) forget(timer);
  };
  const api = {
    setTimeout(handler: unknown, timeout: unknown = 0, ...args: unknown[]) {
      return schedule(handler as Timer["callback"], timerArgs("setTimeout", handler, timeout), args, false, true);
    },
    setInterval(handler: unknown, timeout: unknown = 0, ...args: unknown[]) {
      return schedule(handler as Timer["callback"], timerArgs("setInterval", handler, timeout), args, true, true);
    },
    clearTimeout(id: unknown = 0) {
      clear(id);
    },
    clearInterval(id: unknown = 0) {
      clear(id);
    },
  };
  for (const name of ["setTimeout", "setInterval", "clearTimeout", "clearInterval"] as const)
    kit.install(name, api[name]);

  kit.now = () => now;
  kit.setTimer = (callback, ms, keepsAlive) => schedule(callback, ms, EMPTY, false, keepsAlive);
  kit.nextTimer = (keeping) => (size === 0 || (keeping && keepingAlive === 0) ? -1 : (heap[0] as Timer).due);
  kit.clearTimers = () => {
    while (size > 0) forget(heap[0] as Timer);
  };
  kit.fireTimer = (at) => {
    if (at > now) now = at;
    if (size === 0 || (heap[0] as Timer).due > now) return false;
    const timer = heap[0] as Timer;
    if (timer.interval === 0) forget(timer);
    else unheap(timer);
    try {
      apply(timer.callback, G, timer.args);
    } catch (error) {
      kit.reportException(error);
    }
    // An interval its callback did not clear comes round again.
    if (timer.interval > 0 && byId.get(timer.id) === timer) {
      timer.due = now + timer.interval;
      timer.seq = nextSeq++;
      push(timer);
    }
    return true;
  };
}
