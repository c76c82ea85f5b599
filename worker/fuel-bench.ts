/**
 * The Worker of `npm run bench:fuel:workerd` (bench/fuel-workerd.ts starts it under `wrangler dev` with
 * bench/fuel-wrangler.toml): `GET /?name=<runaway>` runs one runaway of bench/fuel-catalogue.ts with the clock frozen
 * and answers its status and fuel; the bench reads the CPU workerd spent on it.
 * @module
 */
import { RUNAWAYS, transport } from "../bench/fuel-catalogue.js";
import { createSandbox } from "../src/index.js";
import wasm from "../wasm/quickjs-fuel.wasm";

const FUEL = 100_000_000;
const settings = { wasm, clock: () => 0, safetyCap: { fuel: FUEL, cpuTimeMs: 1e12 } } as const;
const plain = createSandbox(settings);
const web = createSandbox({
  ...settings,
  webApis: true,
  fetch: { allow: ["http://local.test"], fetch: transport, maxRequests: 1e9, timeoutMs: 1e9 },
});
const js = { language: "javascript", memoryLimitBytes: 256 * 1024 * 1024 } as const;

export default {
  async fetch(request): Promise<Response> {
    const name = new URL(request.url).searchParams.get("name") ?? "";
    if (name === "") {
      // The engine's wasm is compiled in tiers: the first runaway would pay for the optimizing tier.
      const warm = await plain.runCode("for (let i = 0; i < 3e7; i++);", js);
      await web.runCode("export default 0", js);
      return Response.json({ fuel: FUEL, status: warm.status });
    }
    const runaway = RUNAWAYS[name];
    // A name of none: a request that runs nothing, what the bench takes off each runaway's CPU.
    if (runaway === undefined) return Response.json({ status: "none", fuelUsed: 0 });
    const { source, globals = {}, modules = {} } = runaway;
    const result = await (runaway.web ? web : plain).runCode(source, { ...js, globals, modules });
    return Response.json({ status: result.status, fuelUsed: result.fuelUsed });
  },
} satisfies ExportedHandler;
