/**
 * The host's state machine (docs/environment.md, "The host's states"):
 *
 *     [*] -> queued;  queued -> running | idle;  running -> idle | terminating;  terminating -> idle
 *
 * plus `idle -> queued` when an idle process is run again (`POST /processes/:pid/signals/run`).
 * @module
 */
import type { HostState } from "./storage.js";

const NEXT: Record<HostState, readonly HostState[]> = {
  idle: ["queued"],
  queued: ["running", "idle"],
  running: ["idle", "terminating"],
  terminating: ["idle"],
};

/** `apply` a legal move, ignore a `duplicate` (running -> running), `reject` a nonsensical one (idle -> running). */
export function transition(from: HostState, to: HostState): "apply" | "duplicate" | "reject" {
  if (from === to) return "duplicate";
  return NEXT[from].includes(to) ? "apply" : "reject";
}

/** States in which a process belongs to an environment. */
export const isActive = (state: HostState): boolean => state !== "idle";
