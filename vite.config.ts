import { defineConfig } from "vite";
import { runcodePackages } from "./web/packages-plugin.js";

/**
 * The playground (`web/`), built to `dist/web`. Stop is a worker restart (`worker.terminate()`), so no
 * `SharedArrayBuffer` and no cross-origin isolation headers are needed. The build writes the deployment's npm packages
 * (the packages lock file) for the edge and the page (web/packages-plugin.ts).
 */
export default defineConfig({
  root: "web",
  plugins: [runcodePackages()],
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
