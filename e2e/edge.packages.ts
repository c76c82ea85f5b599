import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expect, test } from "@playwright/test";
import type { JsonValue } from "../src/values/json.js";
import { fromWire } from "../src/values/wire.js";
import { bearer, openPlayground, settledStatus, typeCode } from "./helpers.js";

/** What the lock file of packages.config.ts boots: each package's README example, and Intl beside it. */
const SOURCE = `import dayjs from "dayjs";
import { customAlphabet } from "nanoid";
export default [
  dayjs("2019-01-25").add(1, "day").format("DD/MM/YYYY"),
  customAlphabet("a", 4)(),
  new Intl.NumberFormat("de-DE").format(1234.5),
];`;
const ANSWER = ["26/01/2019", "aaaa", "1.234,5"];

test.describe("the edge built with a packages lock file", () => {
  test.use({ extraHTTPHeaders: bearer("alpha") });

  test("POST /run imports the locked packages by name", async ({ request }) => {
    const response = await request.post("/run", { data: { source: SOURCE, options: { language: "javascript" } } });
    expect(fromWire((await response.json()) as JsonValue)).toMatchObject({ status: "success", result: ANSWER });
    const unlocked = await request.post("/run", { data: { source: 'import _ from "lodash";' } });
    expect(fromWire((await unlocked.json()) as JsonValue)).toMatchObject({
      status: "link_error",
      error: {
        name: "LinkError",
        message:
          "Cannot find module 'lodash': only options.imports, options.modules and the sandbox's packages resolve (dayjs, nanoid)",
      },
    });
  });

  test("a process imports them, as /run does", async ({ request }) => {
    const created = await request.post("/processes", {
      data: { code: `import dayjs from "dayjs";\ncyrnel.output({ day: dayjs("2018-08-08").format("YYYY-MM-DD") });` },
    });
    expect(created.status()).toBe(201);
    const { pid } = (await created.json()) as { pid: number };
    let record: Record<string, unknown> = {};
    for (let i = 0; i < 400 && record.exitState == null; i++) {
      record = (await (await request.get(`/processes/${pid}`)).json()) as Record<string, unknown>;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(record).toMatchObject({ error: null, exitState: "success", output: { day: "2018-08-08" } });
  });

  test("a session's cells import them, as /run does", async ({ request }) => {
    const created = await request.post("/sessions", { data: {} });
    expect(created.status()).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const cell = await request.post(`/sessions/${id}/run`, {
      data: { source: 'import dayjs from "dayjs";\ndayjs("2018-08-08").format("YYYY-MM-DD")', language: "javascript" },
    });
    expect(fromWire((await cell.json()) as JsonValue)).toMatchObject({ status: "success", result: "2018-08-08" });
    expect((await request.delete(`/sessions/${id}`)).status()).toBe(204);
  });

  test("run_code's description lists them with their versions", async ({ baseURL }) => {
    const client = new Client({ name: "e2e", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL("/mcp", baseURL), { requestInit: { headers: bearer("alpha") } }),
    );
    try {
      const { tools } = await client.listTools();
      expect(tools[0]?.description).toMatch(/Installed npm packages.*: `dayjs` 1\.11\.\d+, `nanoid` 5\.\d+\.\d+/);
    } finally {
      await client.close();
    }
  });

  test("the playground names them and runs them in the browser with Intl", async ({ page }) => {
    await openPlayground(page);
    await expect(page.locator("#installed")).toHaveText(
      /^Intl is on \(the browser's own\)\. Installed npm packages, imported by name: dayjs 1\.11\.\d+, nanoid 5\.\d+\.\d+\.$/,
    );
    // nanoid draws from crypto.getRandomValues, a Web API.
    await page.check("#web-apis");
    await typeCode(page, SOURCE);
    await page.click("#run");
    expect(await settledStatus(page)).toBe("success");
    await expect(page.locator("#result")).toContainText('Array(3) ["26/01/2019", "aaaa", "1.234,5"]');
  });
});
