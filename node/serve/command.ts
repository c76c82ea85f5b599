/**
 * The `runcode serve` command: reads its options, starts the server, says where it listens, and stops it on SIGINT
 * or SIGTERM (a second signal exits at once). Bad options exit 2 with one line on standard error; a database it
 * cannot open or an address it cannot listen on exits 1 the same way.
 * @module
 */
import { serve } from "./server.js";
import { SERVE_USAGE, serveOptionsOf } from "./settings.js";

export async function serveCommand(args: string[]): Promise<void> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(SERVE_USAGE);
    return;
  }
  let options: Awaited<ReturnType<typeof serveOptionsOf>>;
  try {
    options = await serveOptionsOf(args, process.env);
  } catch (error) {
    console.error(`runcode serve: ${(error as Error).message} (runcode serve --help)`);
    process.exit(2);
  }
  let served: Awaited<ReturnType<typeof serve>>;
  try {
    served = await serve(options);
  } catch (error) {
    console.error(`runcode serve: ${(error as Error).message}`);
    process.exit(1);
  }
  const stop = (signal: string) => {
    console.log(`runcode serve: ${signal}: stopping`);
    process.once(signal, () => process.exit(1));
    served.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(`runcode serve: ${(error as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  const { keys, allowAnonymous } = options.settings.access;
  const callers = keys.length > 0 ? `${keys.length} API keys` : allowAnonymous ? "anonymous callers" : "no callers";
  if (served.cutOff > 0) console.log(`runcode serve: ${served.cutOff} runs the last stop cut off are marked failed`);
  console.log(
    `runcode serve: listening on ${served.url} (${callers}; database ${options.db.url}; playground ${served.playground ? "served" : "not built: npm run build:web"})`,
  );
}
