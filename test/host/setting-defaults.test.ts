/**
 * The settings' one table of defaults (`SETTING_DEFAULTS` in src/host/limits.ts) is what wrangler.toml's `[vars]`
 * give the edge and what docs/deploy.md's settings table tells a reader: the three name the same settings with the
 * same defaults, the secrets (which have none) only in the docs.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SETTING_DEFAULTS } from "../../src/host/limits.js";

const read = (path: string) => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), "utf8");

/** wrangler.toml's `[vars]` section as `NAME = "value"` lines (the repository reads no other TOML). */
function wranglerVars(): Record<string, string> {
  const toml = read("wrangler.toml");
  const start = toml.indexOf("\n[vars]\n");
  const end = toml.indexOf("\n[", start + 1);
  const section = toml.slice(start, end === -1 ? undefined : end);
  return Object.fromEntries([...section.matchAll(/^(\w+) = "(.*)"$/gm)].map(([, name, value]) => [name, value]));
}

/** docs/deploy.md's settings table: each row's setting, whether it is a secret, and its default cell. */
function documentedSettings(): { name: string; secret: boolean; cell: string }[] {
  const markdown = read("docs/deploy.md");
  const table = markdown.slice(markdown.indexOf("| setting | default | what it protects |"));
  const rows = table.slice(0, table.indexOf("\n\n")).split("\n").slice(2);
  return rows.map((row) => {
    const [setting = "", cell = ""] = row.replace(/^\| /, "").split(" | ");
    const name = /^`(\w+)`/.exec(setting)?.[1] ?? setting;
    return { name, secret: setting.endsWith("(secret)"), cell };
  });
}

/** The value a default cell states: its first code span, quotes dropped (`"false"`, `""` (none), `32`). */
const statedValue = (cell: string) => (/`([^`]*)`/.exec(cell)?.[1] ?? cell).replace(/^"(.*)"$/, "$1");

describe("the settings' defaults", () => {
  it("are wrangler.toml's [vars], setting for setting", () => {
    expect(wranglerVars()).toEqual(SETTING_DEFAULTS);
  });

  it("are what docs/deploy.md's settings table states, the secrets stated as having none", () => {
    const rows = documentedSettings();
    const stated = Object.fromEntries(
      rows.filter((row) => !row.secret).map((row) => [row.name, statedValue(row.cell)]),
    );
    expect(stated).toEqual(SETTING_DEFAULTS);
    expect(rows.filter((row) => row.secret).map((row) => [row.name, row.cell])).toEqual([
      ["RUNCODE_API_KEYS", "none"],
      ["RUNCODE_MCP_SERVERS", "none"],
    ]);
  });
});
