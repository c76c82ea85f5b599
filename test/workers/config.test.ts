/** The edge's settings as the Worker reads them from its environment: `RUNCODE_FETCH_ALLOW`, `RUNCODE_RETENTION_DAYS`. */
import { describe, expect, it } from "vitest";
import { configOf } from "../../worker/config.js";

const base = {
  RUNCODE_ALLOW_ANONYMOUS: "true",
  MAX_ACTIVE_PROCESSES: "1",
  RUNCODE_TENANT_MAX_ACTIVE: "1",
  RUNCODE_TENANT_RUNS_PER_MINUTE: "1",
  RUNCODE_TENANT_CPU_MS_PER_MINUTE: "1",
  RUNCODE_TENANT_CPU_BURST_MS: "1",
  RUNCODE_TENANT_KV_BYTES: "1",
  RUN_CPU_MS: "1",
  RUN_FUEL: "1",
  RUNCODE_SESSIONS_PER_TENANT: "1",
  RUNCODE_SESSION_BYTES_PER_TENANT: "1",
  RUNCODE_SESSION_CELLS_PER_MINUTE: "1",
  RUNCODE_SESSION_IDLE_DAYS: "1",
};
const config = (settings: Record<string, string>) => configOf({ ...base, ...settings } as unknown as Env);

describe("RUNCODE_FETCH_ALLOW", () => {
  it("gives no fetch when empty or absent", async () => {
    expect((await config({})).fetch).toBeUndefined();
    expect((await config({ RUNCODE_FETCH_ALLOW: " , " })).fetch).toBeUndefined();
  });

  it("lists the origins and path prefixes guest code may fetch, normalized", async () => {
    expect((await config({ RUNCODE_FETCH_ALLOW: "HTTPS://API.example.com:443, https://x.org/v1/" })).fetch).toEqual({
      allow: ["https://api.example.com", "https://x.org/v1/"],
    });
  });

  it("names a bad entry", async () => {
    await expect(config({ RUNCODE_FETCH_ALLOW: "https://ok.org,ftp://x.org" })).rejects.toThrow(
      new TypeError('RUNCODE_FETCH_ALLOW entry 2 must be an http: or https: origin, got "ftp://x.org"'),
    );
  });
});

describe("RUNCODE_RETENTION_DAYS", () => {
  it("keeps processes until deleted when empty or absent", async () => {
    expect((await config({})).retentionMs).toBeUndefined();
    expect((await config({ RUNCODE_RETENTION_DAYS: "" })).retentionMs).toBeUndefined();
  });

  it("is a whole number of days, from 1 to 36500", async () => {
    expect((await config({ RUNCODE_RETENTION_DAYS: "30" })).retentionMs).toBe(30 * 86_400_000);
    expect((await config({ RUNCODE_RETENTION_DAYS: "36500" })).retentionMs).toBe(36_500 * 86_400_000);
  });

  it("names a bad value", async () => {
    for (const bad of ["0", "-1", "1.5", "7d", " 7"]) {
      await expect(config({ RUNCODE_RETENTION_DAYS: bad })).rejects.toThrow(
        new TypeError(`RUNCODE_RETENTION_DAYS must be a positive integer, got ${JSON.stringify(bad)}`),
      );
    }
    await expect(config({ RUNCODE_RETENTION_DAYS: "36501" })).rejects.toThrow(
      new TypeError("RUNCODE_RETENTION_DAYS must be at most 36500 days, got 36501"),
    );
  });
});

describe("RUNCODE_TENANT_CPU_MS_PER_MINUTE and RUNCODE_TENANT_CPU_BURST_MS", () => {
  it("are each tenant's share of CPU in milliseconds of fuel, counted in fuel", async () => {
    expect(
      (await config({ RUNCODE_TENANT_CPU_MS_PER_MINUTE: "1500", RUNCODE_TENANT_CPU_BURST_MS: "500" })).tenantCpu,
    ).toEqual({ fuelPerMinute: 1_500_000_000, burstFuel: 500_000_000 });
  });

  it("name a bad value", async () => {
    await expect(config({ RUNCODE_TENANT_CPU_BURST_MS: "0" })).rejects.toThrow(
      new TypeError('RUNCODE_TENANT_CPU_BURST_MS must be a positive integer, got "0"'),
    );
  });
});
