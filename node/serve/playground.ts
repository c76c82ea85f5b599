/**
 * The playground's built files (`npm run build:web` writes them to dist/web), served for what no API route matches,
 * as the edge serves its assets: `/` is `index.html`, a missing file 404. Paths that climb out (`..`), doubled
 * slashes and percent-encoded names are refused by `serveStatic` before the disk is touched.
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { serveStatic } from "@hono/node-server/serve-static";
import { Hono } from "hono";
import { builtFile } from "../built-files.js";

/** dist/web, beside the Node entry's directory. */
const PLAYGROUND_ROOT = fileURLToPath(builtFile("../web/"));

/** The files under `root` as the app's fallback; `undefined` when the playground is not built there. */
export function playgroundFiles(root = PLAYGROUND_ROOT): ((request: Request) => Promise<Response>) | undefined {
  if (!existsSync(join(root, "index.html"))) return undefined;
  const files = new Hono().use("*", serveStatic({ root }));
  files.notFound((c) => c.text("Not found", 404));
  return async (request) => files.fetch(request);
}
