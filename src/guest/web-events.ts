/**
 * `DOMException` (WebIDL), `Event` and `EventTarget` (DOM) and `AbortController` and `AbortSignal` (DOM) of a sandbox
 * made with `webApis: true`. Shipped as source text (see core.ts). Event targets here have no parent, so an event's
 * path is its target alone: capturing listeners run, then the others, all at the target.
 * @module
 */
import type { HostCall } from "./core.js";
import type { WebKit } from "./web-kit.js";

interface EventState {
  type: string;
  bubbles: boolean;
  cancelable: boolean;
  composed: boolean;
  trusted: boolean;
  timeStamp: number;
  target: object | null;
  currentTarget: object | null;
  phase: number;
  stop: boolean;
  stopImmediate: boolean;
  canceled: boolean;
  passive: boolean;
  dispatching: boolean;
  initialized: boolean;
}

interface Listener {
  type: string;
  callback: unknown;
  capture: boolean;
  passive: boolean;
  once: boolean;
  removed: boolean;
}

interface SignalState {
  aborted: boolean;
  reason: unknown;
  algorithms: (() => void)[];
  /** A signal of `AbortSignal.any`: its sources abort it. */
  dependent: boolean;
  sources: object[];
  dependents: object[];
  handler: unknown;
  handlerListener: ((event: unknown) => void) | null;
}

export function guestWebEvents(_hostCall: HostCall, kit: WebKit): void {
  // biome-ignore lint/suspicious/noRedundantUseStrict: shipped as source text and evaluated as a sloppy script.
  "use strict";
  const { apply } = Reflect;
  const { defineProperty } = Object;
  const { trunc } = Math;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const { reportException, setTimer, install, required, dictionary } = kit;
  const tag = (ctor: { prototype: object }, name: string) =>
    defineProperty(ctor.prototype, Symbol.toStringTag, { value: name, configurable: true });
  const constants = (ctor: { prototype: object }, names: readonly string[], first: number) => {
    for (let i = 0; i < names.length; i++) {
      const value = { value: first + i, enumerable: true };
      defineProperty(ctor, names[i] as string, value);
      defineProperty(ctor.prototype, names[i] as string, value);
    }
  };
  // WebIDL's DOMException: an Error whose `name` and `code` come from its prototype.
  const CODES: Record<string, number> = {
    __proto__: null,
    IndexSizeError: 1,
    HierarchyRequestError: 3,
    WrongDocumentError: 4,
    InvalidCharacterError: 5,
    NoModificationAllowedError: 7,
    NotFoundError: 8,
    NotSupportedError: 9,
    InUseAttributeError: 10,
    InvalidStateError: 11,
    SyntaxError: 12,
    InvalidModificationError: 13,
    NamespaceError: 14,
    InvalidAccessError: 15,
    TypeMismatchError: 17,
    SecurityError: 18,
    NetworkError: 19,
    AbortError: 20,
    URLMismatchError: 21,
    QuotaExceededError: 22,
    TimeoutError: 23,
    InvalidNodeTypeError: 24,
    DataCloneError: 25,
  } as unknown as Record<string, number>;
  let nameOf: (exception: unknown) => string;
  class DOMException extends ErrorCtor {
    readonly #name: string;
    constructor(message: unknown = "", name: unknown = "Error") {
      super(`${message}`);
      this.#name = `${name}`;
    }
    static {
      nameOf = (exception) => (exception as DOMException).#name;
    }
  }
  const accessors = {
    get name() {
      return nameOf(this);
    },
    get code() {
      return CODES[nameOf(this)] ?? 0;
    },
  };
  for (const key of ["name", "code"]) {
    const { get } = Object.getOwnPropertyDescriptor(accessors, key) as { get: () => unknown };
    defineProperty(DOMException.prototype, key, { get, enumerable: true, configurable: true });
  }
  constants(
    DOMException,
    "INDEX_SIZE_ERR DOMSTRING_SIZE_ERR HIERARCHY_REQUEST_ERR WRONG_DOCUMENT_ERR INVALID_CHARACTER_ERR NO_DATA_ALLOWED_ERR NO_MODIFICATION_ALLOWED_ERR NOT_FOUND_ERR NOT_SUPPORTED_ERR INUSE_ATTRIBUTE_ERR INVALID_STATE_ERR SYNTAX_ERR INVALID_MODIFICATION_ERR NAMESPACE_ERR INVALID_ACCESS_ERR VALIDATION_ERR TYPE_MISMATCH_ERR SECURITY_ERR NETWORK_ERR ABORT_ERR URL_MISMATCH_ERR QUOTA_EXCEEDED_ERR TIMEOUT_ERR INVALID_NODE_TYPE_ERR DATA_CLONE_ERR".split(
      " ",
    ),
    1,
  );
  tag(DOMException, "DOMException");
  kit.DOMException = DOMException;

  const NONE = 0;
  const AT_TARGET = 2;
  let eventState: (event: unknown) => EventState;
  const isTrusted = {
    get isTrusted() {
      return eventState(this).trusted;
    },
  };
  const isTrustedGetter = (Object.getOwnPropertyDescriptor(isTrusted, "isTrusted") as { get: () => unknown }).get;

  class Event {
    readonly #s: EventState;
    constructor(type: unknown, eventInitDict: unknown = undefined) {
      required(arguments.length, 1, "Event");
      const init = dictionary(eventInitDict, "Event");
      this.#s = {
        __proto__: null,
        type: `${type}`,
        bubbles: !!init.bubbles,
        cancelable: !!init.cancelable,
        composed: !!init.composed,
        trusted: false,
        // The global's time origin is its creation, before the run: the timer clock counts from the run's start, so
        // an event's time is that clock plus the least step it knows (1 ms), positive and never going back.
        timeStamp: kit.now() + 1,
        target: null,
        currentTarget: null,
        phase: NONE,
        stop: false,
        stopImmediate: false,
        canceled: false,
        passive: false,
        dispatching: false,
        initialized: true,
      } as EventState;
      // [LegacyUnforgeable]: an own accessor of every event.
      defineProperty(this, "isTrusted", { get: isTrustedGetter, enumerable: true, configurable: false });
    }
    static {
      eventState = (event) => (event as Event).#s;
    }
    get type(): string {
      return this.#s.type;
    }
    get target(): object | null {
      return this.#s.target;
    }
    get srcElement(): object | null {
      return this.#s.target;
    }
    get currentTarget(): object | null {
      return this.#s.currentTarget;
    }
    composedPath(): object[] {
      const target = this.#s.currentTarget;
      return target === null ? [] : [target];
    }
    get eventPhase(): number {
      return this.#s.phase;
    }
    stopPropagation(): void {
      this.#s.stop = true;
    }
    get cancelBubble(): boolean {
      return this.#s.stop;
    }
    set cancelBubble(value: boolean) {
      if (value) this.#s.stop = true;
    }
    stopImmediatePropagation(): void {
      this.#s.stop = true;
      this.#s.stopImmediate = true;
    }
    get bubbles(): boolean {
      return this.#s.bubbles;
    }
    get cancelable(): boolean {
      return this.#s.cancelable;
    }
    get returnValue(): boolean {
      return !this.#s.canceled;
    }
    set returnValue(value: boolean) {
      if (!value) this.preventDefault();
    }
    preventDefault(): void {
      if (this.#s.cancelable && !this.#s.passive) this.#s.canceled = true;
    }
    get defaultPrevented(): boolean {
      return this.#s.canceled;
    }
    get composed(): boolean {
      return this.#s.composed;
    }
    get timeStamp(): number {
      return this.#s.timeStamp;
    }
    initEvent(type: unknown, bubbles: unknown = false, cancelable: unknown = false): void {
      required(arguments.length, 1, "Event.initEvent");
      const s = this.#s;
      if (s.dispatching) return;
      s.initialized = true;
      s.stop = s.stopImmediate = s.canceled = s.trusted = false;
      s.target = null;
      s.type = `${type}`;
      s.bubbles = !!bubbles;
      s.cancelable = !!cancelable;
    }
  }
  constants(Event, ["NONE", "CAPTURING_PHASE", "AT_TARGET", "BUBBLING_PHASE"], 0);
  tag(Event, "Event");

  /** A listener called with its event: the function, or the object's `handleEvent`. What it throws is reported. */
  const call = (listener: Listener, event: Event, target: object) => {
    try {
      const { callback } = listener;
      if (typeof callback === "function") apply(callback, target, [event]);
      else {
        const handleEvent = (callback as { handleEvent?: unknown }).handleEvent;
        if (typeof handleEvent !== "function") throw new TypeErrorCtor("The listener has no handleEvent method");
        apply(handleEvent, callback, [event]);
      }
    } catch (error) {
      reportException(error);
    }
  };
  let listenersOf: (target: EventTarget) => Listener[];
  const flags = (options: unknown) =>
    typeof options === "object" && options !== null
      ? !!(options as { capture?: unknown }).capture
      : typeof options === "function"
        ? !!(options as unknown as { capture?: unknown }).capture
        : !!options;

  class EventTarget {
    #listeners: Listener[] = [];
    static {
      listenersOf = (target) => target.#listeners;
    }
    addEventListener(type: unknown, callback: unknown, options: unknown = undefined): void {
      required(arguments.length, 2, "EventTarget.addEventListener");
      const capture = flags(options);
      let once = false;
      let passive = false;
      let signal: unknown;
      if ((typeof options === "object" && options !== null) || typeof options === "function") {
        const o = options as Record<string, unknown>;
        once = !!o.once;
        passive = !!o.passive;
        signal = o.signal;
        if (signal !== undefined) signalState(signal, "EventTarget.addEventListener: options.signal");
      }
      if (callback === null || callback === undefined) return;
      if (typeof callback !== "object" && typeof callback !== "function") {
        throw new TypeErrorCtor("EventTarget.addEventListener: the listener must be a function or an object");
      }
      if (signal !== undefined && signalState(signal, "").aborted) return;
      const name = `${type}`;
      const list = this.#listeners;
      for (let i = 0; i < list.length; i++) {
        const l = list[i] as Listener;
        if (l.type === name && l.callback === callback && l.capture === capture) return;
      }
      const listener: Listener = {
        __proto__: null,
        type: name,
        callback,
        capture,
        passive,
        once,
        removed: false,
      } as Listener;
      list[list.length] = listener;
      if (signal !== undefined) kit.addAbortAlgorithm(signal as object, () => remove(this, listener));
    }
    removeEventListener(type: unknown, callback: unknown, options: unknown = undefined): void {
      required(arguments.length, 2, "EventTarget.removeEventListener");
      const capture = flags(options);
      const name = `${type}`;
      const list = this.#listeners;
      for (let i = 0; i < list.length; i++) {
        const l = list[i] as Listener;
        if (l.type === name && l.callback === callback && l.capture === capture) {
          remove(this, l);
          return;
        }
      }
    }
    dispatchEvent(event: unknown): boolean {
      required(arguments.length, 1, "EventTarget.dispatchEvent");
      let s: EventState;
      try {
        s = eventState(event);
      } catch {
        throw new TypeErrorCtor("EventTarget.dispatchEvent: the argument is not an Event");
      }
      if (s.dispatching || !s.initialized)
        throw new DOMException("The event is already being dispatched", "InvalidStateError");
      s.trusted = false;
      return dispatch(this, event as Event);
    }
  }
  tag(EventTarget, "EventTarget");

  const remove = (target: EventTarget, listener: Listener) => {
    listener.removed = true;
    const list = listenersOf(target);
    let j = 0;
    for (let i = 0; i < list.length; i++) if (list[i] !== listener) list[j++] = list[i] as Listener;
    list.length = j;
  };
  /** The listeners of `target` for the event in one phase at the target: capturing ones, then the others. */
  const invoke = (target: EventTarget, event: Event, s: EventState, capturing: boolean) => {
    if (s.stop) return;
    const list = listenersOf(target);
    const listeners: Listener[] = [];
    for (let i = 0; i < list.length; i++) listeners[i] = list[i] as Listener;
    for (let i = 0; i < listeners.length; i++) {
      const l = listeners[i] as Listener;
      if (l.type !== s.type || l.removed || l.capture !== capturing) continue;
      if (l.once) remove(target, l);
      s.passive = l.passive;
      call(l, event, target);
      s.passive = false;
      if (s.stopImmediate) return;
    }
  };
  const dispatch = (target: EventTarget, event: Event): boolean => {
    const s = eventState(event);
    s.dispatching = true;
    s.target = target;
    s.currentTarget = target;
    s.phase = AT_TARGET;
    invoke(target, event, s, true);
    invoke(target, event, s, false);
    s.phase = NONE;
    s.currentTarget = null;
    s.dispatching = s.stop = s.stopImmediate = false;
    return !s.canceled;
  };
  /** Fires a trusted event of `type` at `target` (an `abort`, say): neither bubbling nor cancelable. */
  const fire = (target: EventTarget, type: string) => {
    const event = new Event(type);
    eventState(event).trusted = true;
    dispatch(target, event);
  };

  let creating = false;
  let signalOf: (signal: unknown) => SignalState;
  const signalState = (signal: unknown, what: string): SignalState => {
    try {
      return signalOf(signal);
    } catch {
      throw new TypeErrorCtor(`${what} must be an AbortSignal`);
    }
  };
  const newSignal = () => {
    creating = true;
    return new AbortSignal();
  };
  /** The DOM's "signal abort": the signal and those that depend on it, their algorithms run, then `abort` fired. */
  const abort = (signal: AbortSignal, reason: unknown) => {
    const s = signalOf(signal);
    if (s.aborted) return;
    s.aborted = true;
    s.reason = reason === undefined ? new DOMException("signal is aborted without reason", "AbortError") : reason;
    const dependents: AbortSignal[] = [];
    for (let i = 0; i < s.dependents.length; i++) {
      const d = s.dependents[i] as AbortSignal;
      const ds = signalOf(d);
      if (ds.aborted) continue;
      ds.aborted = true;
      ds.reason = s.reason;
      dependents[dependents.length] = d;
    }
    abortSteps(signal);
    for (let i = 0; i < dependents.length; i++) abortSteps(dependents[i] as AbortSignal);
  };
  const abortSteps = (signal: AbortSignal) => {
    const s = signalOf(signal);
    const { algorithms } = s;
    s.algorithms = [];
    for (let i = 0; i < algorithms.length; i++) (algorithms[i] as () => void)();
    fire(signal, "abort");
  };
  kit.addAbortAlgorithm = (signal, algorithm) => {
    const s = signalOf(signal);
    if (s.aborted) algorithm();
    else s.algorithms[s.algorithms.length] = algorithm;
  };

  class AbortSignal extends EventTarget {
    readonly #s: SignalState;
    constructor() {
      if (!creating) throw new TypeErrorCtor("Illegal constructor");
      creating = false;
      super();
      this.#s = {
        __proto__: null,
        aborted: false,
        reason: undefined,
        algorithms: [],
        dependent: false,
        sources: [],
        dependents: [],
        handler: null,
        handlerListener: null,
      } as SignalState;
    }
    static {
      signalOf = (signal) => (signal as AbortSignal).#s;
    }
    static abort(reason: unknown = undefined): AbortSignal {
      const signal = newSignal();
      const s = signal.#s;
      s.aborted = true;
      s.reason = reason === undefined ? new DOMException("signal is aborted without reason", "AbortError") : reason;
      return signal;
    }
    static timeout(milliseconds: unknown): AbortSignal {
      required(arguments.length, 1, "AbortSignal.timeout");
      // WebIDL [EnforceRange] unsigned long long.
      const n = Number(milliseconds);
      if (!(n >= 0 && n <= Number.MAX_SAFE_INTEGER)) {
        throw new TypeErrorCtor(`AbortSignal.timeout: ${n} is outside the range of an unsigned long long`);
      }
      const signal = newSignal();
      const timeout = () => abort(signal, new DOMException("signal timed out", "TimeoutError"));
      setTimer(timeout, trunc(n), false);
      return signal;
    }
    static any(signals: unknown): AbortSignal {
      required(arguments.length, 1, "AbortSignal.any");
      const list: AbortSignal[] = [];
      for (const signal of signals as Iterable<unknown>) {
        signalState(signal, "AbortSignal.any: every item");
        list[list.length] = signal as AbortSignal;
      }
      const result = newSignal();
      const rs = result.#s;
      for (let i = 0; i < list.length; i++) {
        const s = (list[i] as AbortSignal).#s;
        if (s.aborted) {
          rs.aborted = true;
          rs.reason = s.reason;
          return result;
        }
      }
      rs.dependent = true;
      const follow = (source: AbortSignal) => {
        for (let i = 0; i < rs.sources.length; i++) if (rs.sources[i] === source) return;
        rs.sources[rs.sources.length] = source;
        const dependents = source.#s.dependents;
        dependents[dependents.length] = result;
      };
      for (let i = 0; i < list.length; i++) {
        const s = (list[i] as AbortSignal).#s;
        if (!s.dependent) follow(list[i] as AbortSignal);
        else for (let j = 0; j < s.sources.length; j++) follow(s.sources[j] as AbortSignal);
      }
      return result;
    }
    get aborted(): boolean {
      return this.#s.aborted;
    }
    get reason(): unknown {
      return this.#s.reason;
    }
    throwIfAborted(): void {
      if (this.#s.aborted) throw this.#s.reason;
    }
    get onabort(): unknown {
      return this.#s.handler;
    }
    /** An event handler attribute (HTML): its listener is added when first set, and removed when set to null. */
    set onabort(value: unknown) {
      const s = this.#s;
      if ((typeof value !== "object" && typeof value !== "function") || value === null) {
        s.handler = null;
        if (s.handlerListener !== null) this.removeEventListener("abort", s.handlerListener);
        s.handlerListener = null;
        return;
      }
      s.handler = value;
      if (s.handlerListener !== null) return;
      const target = this;
      s.handlerListener = function (this: unknown, event: unknown) {
        const handler = s.handler;
        if (handler === null) return;
        if (typeof handler !== "function") throw new TypeErrorCtor("onabort is not a function");
        if (apply(handler, target, [event]) === false) (event as Event).preventDefault();
      };
      this.addEventListener("abort", s.handlerListener);
    }
  }
  tag(AbortSignal, "AbortSignal");

  class AbortController {
    readonly #signal = newSignal();
    get signal(): AbortSignal {
      return this.#signal;
    }
    abort(reason: unknown = undefined): void {
      abort(this.#signal, reason);
    }
  }
  tag(AbortController, "AbortController");

  install("DOMException", DOMException);
  install("Event", Event);
  install("EventTarget", EventTarget);
  install("AbortSignal", AbortSignal);
  install("AbortController", AbortController);
}
