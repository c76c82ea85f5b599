import { describe, expect, test } from "vitest";
import { toJson } from "../../src/values/json.js";

describe("toJson", () => {
  test("the documented conversion of cloned values", () => {
    expect(
      toJson({
        d: new Date(0),
        b: 12n,
        m: new Map([["k", 1]]),
        s: new Set([1]),
        u: undefined,
        t: new Uint8Array([1, 2]),
      }),
    ).toEqual({ d: "1970-01-01T00:00:00.000Z", b: "12", m: { k: 1 }, s: [1], t: [1, 2] });
  });
});
