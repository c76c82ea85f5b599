import { expect, type Page, test } from "@playwright/test";
import { openPlayground, settledStatus, typeCode } from "./helpers.js";

/** Types `code` as the entry and runs it as a cell; the status it settles with. */
async function runCell(page: Page, code: string): Promise<string> {
  await typeCode(page, code);
  await page.getByRole("button", { name: "Run cell" }).click();
  return settledStatus(page);
}

const lastResult = (page: Page) => page.locator("#transcript .cell").last().locator(".cell-result");

test("session mode: cells keep state, a fork is independent, Stop keeps the session, Reset forgets", async ({
  page,
}) => {
  await openPlayground(page);
  await page.getByRole("checkbox", { name: "Session" }).check();
  await expect(page.locator("#run-edge")).toBeDisabled();

  expect(await runCell(page, "let x = 41")).toBe("success");
  expect(await runCell(page, "x + 1")).toBe("success");
  await expect(page.locator("#transcript .cell")).toHaveCount(2);
  await expect(lastResult(page)).toHaveText("42");

  await page.getByRole("button", { name: "Fork" }).click();
  await expect(page.getByLabel("Branch")).toHaveValue("1");
  await expect(page.getByLabel("Branch").locator("option:checked")).toHaveText("fork 1");
  await expect(page.locator("#transcript .fork-mark")).toHaveText("forked from main");
  expect(await runCell(page, "x = 0")).toBe("success");
  await expect(lastResult(page)).toHaveText("0");

  await page.getByLabel("Branch").selectOption({ label: "main" });
  await expect(page.locator("#transcript .cell")).toHaveCount(2);
  expect(await runCell(page, "x")).toBe("success");
  await expect(lastResult(page)).toHaveText("41");

  // A cell that holds the worker's thread: Stop ends it, and the session goes on as it was before the cell.
  await typeCode(page, "x = 1;\nfor (;;) {}");
  await page.getByRole("button", { name: "Run cell" }).click();
  await expect(page.locator("#status")).toHaveText("running");
  await page.getByRole("button", { name: "Stop" }).click();
  expect(await settledStatus(page)).toBe("terminated");
  await expect(page.getByRole("button", { name: "Run cell" })).toBeEnabled({ timeout: 15_000 });
  expect(await runCell(page, "x")).toBe("success");
  await expect(lastResult(page)).toHaveText("41");

  await page.getByRole("button", { name: "Reset session" }).click();
  await expect(page.locator("#transcript .cell")).toHaveCount(0);
  expect(await runCell(page, "x")).toBe("error");
  await expect(page.locator("#transcript .cell-error")).toHaveText(/^ReferenceError: 'x' is not defined/);
});
