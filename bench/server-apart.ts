/**
 * A loopback server in a process of its own, as deployments meet one (its CPU is not the bench's): `source` is an ES
 * module that listens on 127.0.0.1 and prints its port as its first line of output.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";

export interface ServerApart {
  origin: string;
  /** Ends the server's process group. */
  stop(): void;
}

export async function serverApart(source: string): Promise<ServerApart> {
  const child = spawn(process.execPath, ["--input-type=module", "-e", source], {
    detached: true,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [port] = (await once(child.stdout, "data")) as [Buffer];
  return {
    origin: `http://127.0.0.1:${port.toString().trim()}`,
    stop: () => {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGTERM");
    },
  };
}
