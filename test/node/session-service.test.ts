/**
 * The host's `SessionService` on the core's sessions, as `runcode serve` makes them (node/serve/sessions.ts): state
 * that goes back to storage and comes back, forks of real realms, and the tenant's tools bound again on restore.
 */
import { describe, expect, it } from "vitest";
import { inThreadSessions } from "../../node/serve/sessions.js";
import { SessionService } from "../../src/host/sessions/session-service.js";
import { MemorySessionStore } from "../../src/host/sessions/store.js";
import { kvService, memoryKeyValueStores } from "../../src/tools/kv.js";
import { ToolRegistry } from "../../src/tools/registry.js";

function service() {
  const sessions = new SessionService({
    store: new MemorySessionStore(),
    engine: inThreadSessions({}),
    defaultMemoryLimitBytes: 32 * 1024 * 1024,
    tools: new ToolRegistry().register(kvService(memoryKeyValueStores())),
    maxLive: 1,
  });
  const cell = async (tenant: string, id: string, source: string) =>
    (await (await sessions.run(tenant, id, { source, language: "javascript" })).answer).result;
  return { sessions, cell };
}

describe("SessionService on the core's sessions", () => {
  it("a session evicted from memory resumes from its snapshot, its tools bound again", async () => {
    const { sessions, cell } = service();
    const a = await sessions.create("t", {});
    expect(
      await cell("t", a.id, "import { get, set } from 'kv'; let x = 41; await set({ key: 'k', value: 'v' }); x"),
    ).toMatchObject({
      status: "success",
      result: 41,
    });
    const b = await sessions.create("t", {});
    expect(await cell("t", b.id, "typeof x")).toMatchObject({ result: "undefined" });
    expect(
      await cell("t", a.id, "[x + 1, (await get({ key: 'k' })).value, await set({ key: 'j', value: 1 })]"),
    ).toMatchObject({
      status: "success",
      result: [42, "v", { bytes: 1 }],
    });
    await sessions.stop();
  });

  it("a fork and its parent go their own ways", async () => {
    const { sessions, cell } = service();
    const parent = await sessions.create("t", { options: { globals: { base: 10 } } });
    await cell("t", parent.id, "const list = [base]");
    const child = await sessions.fork("t", parent.id);
    await cell("t", child.id, "list.push('child')");
    await cell("t", parent.id, "list.push('parent')");
    expect(await cell("t", child.id, "list")).toMatchObject({ result: [10, "child"] });
    expect(await cell("t", parent.id, "list")).toMatchObject({ result: [10, "parent"] });
    expect((await sessions.get("t", child.id)).cells).toBe(3);
    await sessions.stop();
  });
});
