/** The session settings of a served host: their defaults, each read from its variable, bad ones refused by name. */
import { describe, expect, it } from "vitest";
import { SETTING_DEFAULTS } from "../../../src/host/limits.js";
import { DEFAULT_SESSION_LIMITS } from "../../../src/host/sessions/limits.js";
import { hostSettingsOf } from "../../../src/host/settings.js";

describe("session settings", () => {
  it("default to the host's table and read each variable", async () => {
    expect((await hostSettingsOf(SETTING_DEFAULTS)).sessions).toEqual(DEFAULT_SESSION_LIMITS);
    expect(DEFAULT_SESSION_LIMITS).toEqual({
      perTenant: 100,
      bytesPerTenant: 268_435_456,
      cellsPerMinute: 600,
      idleMs: 7 * 86_400_000,
    });
    const set = await hostSettingsOf({
      ...SETTING_DEFAULTS,
      RUNCODE_SESSIONS_PER_TENANT: "3",
      RUNCODE_SESSION_BYTES_PER_TENANT: "1000",
      RUNCODE_SESSION_CELLS_PER_MINUTE: "5",
      RUNCODE_SESSION_IDLE_DAYS: "2",
    });
    expect(set.sessions).toEqual({ perTenant: 3, bytesPerTenant: 1000, cellsPerMinute: 5, idleMs: 2 * 86_400_000 });
  });

  it("refuse a bad value, naming the setting", async () => {
    await expect(hostSettingsOf({ ...SETTING_DEFAULTS, RUNCODE_SESSIONS_PER_TENANT: "0" })).rejects.toThrow(
      'RUNCODE_SESSIONS_PER_TENANT must be a positive integer, got "0"',
    );
    await expect(hostSettingsOf({ ...SETTING_DEFAULTS, RUNCODE_SESSION_IDLE_DAYS: "36501" })).rejects.toThrow(
      "RUNCODE_SESSION_IDLE_DAYS must be at most 36500 days, got 36501",
    );
  });
});
