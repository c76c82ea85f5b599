/** A service for tests that need runs in flight: `import { hold } from "gate"` waits until the test releases it. */
import type { Service } from "../../src/tools/registry.js";

export function gateService(): { gate: Service; held: (() => void)[] } {
  const held: (() => void)[] = [];
  const gate: Service = {
    id: "gate",
    description: "Holds a run until released",
    tools: [
      {
        id: "hold",
        description: "Blocks",
        inputSchema: { type: "object" },
        run: () => new Promise((resolve) => held.push(() => resolve(1))),
      },
    ],
  };
  return { gate, held };
}
