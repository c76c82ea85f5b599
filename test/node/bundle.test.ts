import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";

/** Cloudflare's limit for a Worker on the free plan, compressed. */
const LIMIT_GZIP_BYTES = 3_000_000;

it("the Worker bundles under 3 MB gzip (wrangler deploy --dry-run)", () => {
  const outdir = mkdtempSync(join(tmpdir(), "runcode-bundle-"));
  try {
    const output = execFileSync("npx", ["wrangler", "deploy", "--dry-run", "--outdir", outdir], {
      encoding: "utf8",
      env: { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" },
    });
    const match = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(output);
    expect(match).not.toBeNull();
    const [, total, gzip] = match as RegExpExecArray;
    console.log(`Worker bundle: ${total} KiB, ${gzip} KiB gzip (limit ${LIMIT_GZIP_BYTES / 1000} kB)`);
    expect(Number(gzip) * 1024).toBeLessThan(LIMIT_GZIP_BYTES);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}, 60_000);
