/**
 * The process routes' backend on the edge: pids and slots from the registry, each process in its own Durable
 * Object, reached over RPC. The HTTP app (src/host) does the rest: it names the tenant, checks ownership and
 * answers errors.
 * @module
 */
import type { SlotQuotas } from "../src/host/admission/slots.js";
import { HostError } from "../src/host/errors.js";
import type { ProcessBackend } from "../src/host/http/process-routes.js";
import { unwrap } from "./rpc-refusals.js";

export function edgeProcesses(env: Env, limits: SlotQuotas): ProcessBackend {
  const registry = () => env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
  const processObject = (pid: number) => env.PROCESSES.get(env.PROCESSES.idFromName(String(pid)));
  return {
    async create(input) {
      const pid = unwrap(await registry().allocate(input.tenant, limits));
      let created: Awaited<ReturnType<ReturnType<typeof processObject>["create"]>>;
      try {
        created = await processObject(pid).create(pid, input);
      } catch (error) {
        // Without this the placeholder stayed `queued` in the registry and held one of the active slots.
        await registry().remove(pid);
        throw new HostError("internal", `Process ${pid} could not be created: ${(error as Error).message}`);
      }
      // A refused creation leaves no trace but a pid that is never handed out again.
      if ("error" in created) await registry().remove(pid);
      return unwrap(created);
    },
    // The registry knows whose a pid is: an unknown or foreign pid never reaches (and so never creates) an object.
    summary: async (pid, tenant) =>
      (await registry().tenantOf(pid)) === tenant ? ((await processObject(pid).summary(pid)) ?? undefined) : undefined,
    async *read(pid, field) {
      for (let at: number | undefined = 0; at !== undefined; ) {
        const chunk = await processObject(pid).read(pid, field, at);
        if (chunk === null) return;
        if (chunk.text !== "") yield chunk.text;
        at = chunk.next;
      }
    },
    list: (filter) => registry().list(filter),
    events: async (pid) => unwrap(await processObject(pid).events(pid)) ?? undefined,
    kill: async (pid) => unwrap(await processObject(pid).kill(pid)),
    async run(pid) {
      unwrap(await registry().reserveRun(pid, limits));
      // Refused or failed, the registry gets the record back as it is (idle), and the slot with it.
      const restore = async () => {
        const record = await processObject(pid).summary(pid);
        if (record !== null) await registry().index(record);
      };
      let answered: Awaited<ReturnType<ReturnType<typeof processObject>["run"]>>;
      try {
        answered = await processObject(pid).run(pid);
      } catch (error) {
        await restore();
        throw error;
      }
      if ("error" in answered) await restore();
      return unwrap(answered);
    },
    delete: async (pid) => {
      unwrap(await processObject(pid).delete(pid));
    },
  };
}
