/**
 * The layers of src/, written once: each imports only from the layers below it. Writes biome.json's per-folder
 * `noRestrictedImports` overrides of src/ from these lists (`node scripts/layers.mjs`), or, with `--check` (run by
 * `npm run lint`), fails if biome.json's differ from what it would write. The other overrides are biome.json's own.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";

/** The folders of src/, lowest first. */
const LAYERS = ["guest", "values", "fetch", "core", "tools", "environment", "host"];
/** The files at the top of src/host/, below all of its folders. */
const HOST_BASE = ["errors.ts", "limits.ts"];
/** The folders of src/host/, lowest first. */
const HOST_LAYERS = ["admission", "runs", "processes", "mcp", "http"];

const PLATFORM = {
  group: ["node:*", "cloudflare:*", "vite", "vite/*"],
  message: "src/ is platform-neutral: platforms inject what it needs.",
};
const MESSAGE = `layers import only downward: ${LAYERS.join(" < ").replace(
  "host",
  `host (${HOST_LAYERS.join(" < ")})`,
)} < the entries (docs/architecture.md)`;

/** An override of the files `includes` refusing the platforms and the imports of `group`. */
const override = (includes, group) => ({
  includes,
  linter: {
    rules: {
      style: {
        noRestrictedImports: {
          level: "error",
          options: { patterns: group.length === 0 ? [PLATFORM] : [PLATFORM, { group, message: MESSAGE }] },
        },
      },
    },
  },
});

/** The generated overrides: all of src/, then each layer with what lies above it. */
function layerOverrides() {
  const above = (list, i) => list.slice(i + 1);
  return [
    override(["src/**"], []),
    ...LAYERS.filter((layer) => layer !== "host").map((layer, i) =>
      override(
        [`src/${layer}/**`],
        i === 0 ? ["../**"] : [...above(LAYERS, i).map((up) => `../${up}/**`), "../index.js"],
      ),
    ),
    ...HOST_BASE.map((file) =>
      override([`src/host/${file}`], [...HOST_LAYERS.map((folder) => `./${folder}/**`), "./index.js"]),
    ),
    ...HOST_LAYERS.map((folder, i) =>
      override(
        [`src/host/${folder}/**`],
        [...above(HOST_LAYERS, i).map((up) => `../${up}/**`), "../index.js", "../../index.js"],
      ),
    ),
  ];
}

/** Whether an override of biome.json is one this script writes. */
const isLayerOverride = (entry) =>
  entry.linter?.rules?.style?.noRestrictedImports !== undefined &&
  entry.includes.every((path) => path.startsWith("src/"));

const config = JSON.parse(readFileSync("biome.json", "utf8"));
const wanted = {
  ...config,
  overrides: [...config.overrides.filter((entry) => !isLayerOverride(entry)), ...layerOverrides()],
};

if (process.argv.includes("--check")) {
  if (!isDeepStrictEqual(config, wanted)) {
    console.error("biome.json's layer overrides differ from scripts/layers.mjs: run `node scripts/layers.mjs`");
    process.exit(1);
  }
} else {
  writeFileSync("biome.json", `${JSON.stringify(wanted, null, 2)}\n`);
  execFileSync("npx", ["biome", "format", "--write", "biome.json"], { stdio: "inherit" });
}
