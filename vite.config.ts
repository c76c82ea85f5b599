import { defineConfig } from "vite";

/**
 * The playground (`web/`), built to `dist/web`. Stop is a worker restart (`worker.terminate()`), so no
 * `SharedArrayBuffer` and no cross-origin isolation headers are needed.
 */
export default defineConfig({
  root: "web",
  base: "./",
  // The docs ship beside the page (`/contract.md`, `/playground.md`...), so its intro can link to them.
  publicDir: "../docs",
  build: {
    outDir: "../dist/web",
    emptyOutDir: true,
    target: "es2022",
  },
  worker: { format: "es" },
  server: { host: "127.0.0.1", port: 5173, strictPort: true },
  preview: { host: "127.0.0.1", port: 4173, strictPort: true },
});
