/**
 * Which upstream MCP servers a runcode MCP server bridges in, in the format MCP clients write
 * (`{"mcpServers": {"github": {"command": "...", "args": [...]}, "docs": {"url": "https://...", "headers": {...}}}}`).
 * Checked whole before anything connects, so a mistake is one clear error naming where it is, never a guess.
 * @module
 */

/** A server reached over Streamable HTTP (any platform with `fetch`). */
export interface HttpUpstream {
  url: string;
  /** Sent with every request (an `Authorization` header, typically). */
  headers?: Record<string, string>;
}

/** A server started as a command, spoken to over its standard input and output (Node only). */
export interface StdioUpstream {
  command: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
}

export type Upstream = HttpUpstream | StdioUpstream;

/** A server's name becomes the module the sandbox imports, so it is a service id. */
const NAME = /^[A-Za-z_][\w-]{0,63}$/;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const isStrings = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === "string");

const isStringRecord = (value: unknown): value is Record<string, string> =>
  isRecord(value) && Object.values(value).every((item) => typeof item === "string");

/** The `mcpServers` of `config`; `where` (a file or a setting) starts every error's message. */
export function upstreamsFrom(config: unknown, where: string): Record<string, Upstream> {
  if (!isRecord(config)) throw new TypeError(`${where}: must be a JSON object with "mcpServers"`);
  const servers = config.mcpServers ?? {};
  if (!isRecord(servers)) throw new TypeError(`${where}: "mcpServers" must be an object of named servers`);
  const upstreams: Record<string, Upstream> = {};
  for (const [name, server] of Object.entries(servers)) {
    const bad = (problem: string) => new TypeError(`${where}: server '${name.slice(0, 100)}' ${problem}`);
    if (!NAME.test(name)) throw bad(`needs a name that is a module name (${NAME})`);
    if (!isRecord(server)) throw bad("must be an object");
    if (typeof server.url === "string") {
      let url: URL;
      try {
        url = new URL(server.url);
      } catch {
        throw bad(`has a "url" that is not a URL`);
      }
      if (url.protocol !== "https:" && url.protocol !== "http:") throw bad(`needs an http or https "url"`);
      if (server.headers !== undefined && !isStringRecord(server.headers))
        throw bad(`needs "headers" of string values`);
      upstreams[name] = { url: url.href, ...(server.headers === undefined ? {} : { headers: server.headers }) };
    } else if (typeof server.command === "string") {
      if (server.args !== undefined && !isStrings(server.args)) throw bad(`needs "args" of strings`);
      if (server.env !== undefined && !isStringRecord(server.env)) throw bad(`needs "env" of string values`);
      if (server.cwd !== undefined && typeof server.cwd !== "string") throw bad(`needs a string "cwd"`);
      upstreams[name] = {
        command: server.command,
        ...(server.args === undefined ? {} : { args: server.args }),
        ...(server.env === undefined ? {} : { env: server.env }),
        ...(server.cwd === undefined ? {} : { cwd: server.cwd }),
      };
    } else throw bad(`needs a "command" (stdio) or a "url" (Streamable HTTP)`);
  }
  return upstreams;
}

/** The servers reached by URL; a command is an error, for hosts that cannot start processes (the edge). */
export function httpUpstreamsFrom(config: unknown, where: string): Record<string, HttpUpstream> {
  const upstreams = upstreamsFrom(config, where);
  for (const [name, upstream] of Object.entries(upstreams)) {
    if (!("url" in upstream))
      throw new TypeError(`${where}: server '${name}' is a command; this host reaches upstream servers by "url" only`);
  }
  return upstreams as Record<string, HttpUpstream>;
}
