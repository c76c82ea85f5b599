/**
 * The catalog routes: the environment's documentation, the services processes can call, and each tool's
 * documentation.
 * @module
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { ToolRegistry } from "../../tools/registry.js";
import type { ToolDefinition } from "../../tools/types.js";
import { HostError } from "../errors.js";
import type { Environments } from "../processes/environments.js";
import { type AppEnv, errorResponses, routes, secured } from "./route-context.js";
import { ServiceList, ToolParameters } from "./schemas.js";

/** What the catalog routes read: the process service's environments and tools. */
export interface Catalog {
  environments: Pick<Environments, "docs" | "toolDocs">;
  tools: Pick<ToolRegistry, "list" | "tool">;
}

const markdown = (description: string) => ({
  description,
  content: { "text/markdown": { schema: z.string() } },
});
const MARKDOWN = { "content-type": "text/markdown; charset=utf-8" };

/** The catalog routes over `catalog`. */
export function catalogRoutes(catalog: Catalog): OpenAPIHono<AppEnv> {
  const app = routes();
  app.openapi(
    createRoute(
      secured({
        method: "get",
        path: "/environment/docs",
        summary: "The environment's documentation for code authors",
        responses: { 200: markdown("Markdown"), ...errorResponses("no_environment") },
      }),
    ),
    async (c) => c.body(await catalog.environments.docs(), 200, MARKDOWN),
  );
  app.openapi(
    createRoute(
      secured({
        method: "get",
        path: "/tools",
        summary: "The services processes can call, with their tools",
        responses: { 200: { description: "Services", content: { "application/json": { schema: ServiceList } } } },
      }),
    ),
    (c) => c.json({ services: catalog.tools.list() as z.infer<typeof ServiceList>["services"] }, 200),
  );
  app.openapi(
    createRoute(
      secured({
        method: "get",
        path: "/tools/{serviceId}/{toolId}/docs",
        summary: "A tool's documentation",
        request: { params: ToolParameters },
        responses: { 200: markdown("Markdown"), ...errorResponses("not_found", "no_environment") },
      }),
    ),
    async (c) => {
      const { serviceId, toolId } = c.req.valid("param");
      const tool: ToolDefinition | undefined = catalog.tools.tool(serviceId, toolId);
      if (tool === undefined) throw new HostError("not_found", `No tool ${serviceId}.${toolId}`);
      const docs = await catalog.environments.toolDocs({
        serviceId,
        toolId,
        description: tool.description,
        inputSchema: tool.inputSchema,
        outputSchema: tool.outputSchema,
      });
      return c.body(docs, 200, MARKDOWN);
    },
  );
  return app;
}
