/** The edge's settings as the Worker reads them from its environment: `RUNCODE_FETCH_ALLOW`. */
import { describe, expect, it } from "vitest";
import { configOf } from "../../worker/config.js";

const base = {
  RUNCODE_ALLOW_ANONYMOUS: "true",
  MAX_ACTIVE_PROCESSES: "1",
  RUNCODE_TENANT_MAX_ACTIVE: "1",
  RUNCODE_TENANT_RUNS_PER_MINUTE: "1",
  RUNCODE_TENANT_KV_BYTES: "1",
  RUN_CPU_MS: "1",
  RUN_FUEL: "1",
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
