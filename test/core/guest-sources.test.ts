/**
 * The guest's source text is built, not hand-made: the committed src/guest/sources.generated.ts must be exactly what
 * scripts/build-guest.ts makes from the guest functions (`npm run build:guest` rewrites it).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { guestSources } from "../../scripts/build-guest.js";
import { guestMarshalSource } from "../../src/guest/sources.generated.js";

describe("the guest's source text", () => {
  it("is byte for byte a rebuild from the guest functions (run `npm run build:guest` after changing them)", () => {
    expect(readFileSync(new URL("../../src/guest/sources.generated.ts", import.meta.url), "utf8")).toBe(guestSources());
  });

  it("has the encoder build no template literal with a substitution (the engine calls String.prototype.concat)", () => {
    expect(guestMarshalSource).not.toContain("${");
  });
});
