import { describe, expect, test } from "vitest";
import { transition } from "../../../src/host/processes/states.js";
import { HOST_STATES } from "../../../src/host/processes/storage.js";

describe("state machine", () => {
  test("exactly the diagram's transitions (+ idle -> queued for a re-run); duplicates and nonsense are told apart", () => {
    const table = Object.fromEntries(
      HOST_STATES.map((from) => [from, Object.fromEntries(HOST_STATES.map((to) => [to, transition(from, to)]))]),
    );
    expect(table).toEqual({
      idle: { idle: "duplicate", queued: "apply", running: "reject", terminating: "reject" },
      queued: { idle: "apply", queued: "duplicate", running: "apply", terminating: "reject" },
      running: { idle: "apply", queued: "reject", running: "duplicate", terminating: "apply" },
      terminating: { idle: "apply", queued: "reject", running: "reject", terminating: "duplicate" },
    });
  });
});
