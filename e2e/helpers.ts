import { expect, type Page } from "@playwright/test";

/** Opens the page on a clean origin state and waits for the sandbox worker to be warm. */
export async function openPlayground(page: Page, hash = ""): Promise<void> {
  await page.goto(`/${hash}`);
  await expect(page.locator("body[data-ready=true]")).toBeAttached({ timeout: 15_000 });
}

/** Replaces the shown file's text with `code`, as a user pasting it would. */
export async function typeCode(page: Page, code: string): Promise<void> {
  const content = page.locator(".cm-content");
  await content.click();
  await page.keyboard.press("ControlOrMeta+a");
  await page.keyboard.press("Delete");
  // Inserted as one input, as a paste would be: typed key by key, the editor's bracket closing and indentation
  // would (rightly) add braces of their own.
  await page.keyboard.insertText(code);
}

/** Waits for the run to settle and returns the status badge's text. */
export async function settledStatus(page: Page, timeout = 15_000): Promise<string> {
  await expect(page.locator("#status")).not.toHaveText(/running|idle/, { timeout });
  return (await page.locator("#status").textContent()) ?? "";
}

/** Picks an example by its id. */
export async function loadExample(page: Page, id: string): Promise<void> {
  await page.selectOption("#example", id);
}

/** The editor's cursor: file tab, 1-based line and column. */
export async function selection(page: Page): Promise<{ file: string; line: number; column: number }> {
  return page.evaluate(() =>
    (
      window as unknown as { runcode: { selection(): { file: string; line: number; column: number } } }
    ).runcode.selection(),
  );
}

/** How many worker messages the page ignored as forged or stale. */
export async function ignored(page: Page): Promise<number> {
  return page.evaluate(() => (window as unknown as { runcode: { ignored(): number } }).runcode.ignored());
}

/**
 * The tenants' keys the e2e server is started with (playwright.config.ts): `alpha` for most tests, `beta` to prove
 * tenants apart, `burst` for the 1,000-creation burst, which spends its tenant's whole rate.
 */
export const KEYS = {
  alpha: "alpha-test-key-0123456789abcdef",
  beta: "beta-test-key-0123456789abcdef",
  burst: "burst-test-key-0123456789abcdef",
} as const;

/** The `Authorization` header of `tenant`. */
export const bearer = (tenant: keyof typeof KEYS) => ({ authorization: `Bearer ${KEYS[tenant]}` });

/** RUNCODE_API_KEYS for the keys above. */
export const API_KEYS_SETTING = Object.entries(KEYS)
  .map(([tenant, key]) => `${tenant}:${key}`)
  .join(",");

/** Where the MCP tests serve their upstream server (test/mcp/fixtures), and the header the edge host sends it. */
export const CALC_PORT = 8795;
export const CALC_URL = `http://127.0.0.1:${CALC_PORT}/mcp`;
export const CALC_TOKEN = "calc-token-0123456789";
export const CALC_HEADERS = { authorization: `Bearer ${CALC_TOKEN}` };
