/**
 * One server per database file: `runcode serve` holds `<file>.lock`, made with `O_EXCL` and holding its pid and host
 * name, for as long as it runs. A second start on the same file finds the lock and exits. A lock of this host whose
 * pid no longer runs, or is the starting server's own (a container restarted as pid 1), was left by a server that
 * crashed, and is taken over; another host's lock cannot be checked, and stands. A libSQL server (`libsql://`) has
 * no file here to lock: one server per database is then the deployment's to keep (docs/deploy.md).
 * @module
 */
import { readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";

/** Lock files this process holds: a second server in the same process is refused as another's would be. */
const held = new Set<string>();

export interface DatabaseLock {
  /** Removes the lock file (once). */
  release(): void;
}

/** The file of a `file:` URL (`file:runcode.db`, `file:///srv/runcode.db?mode=rwc`); `undefined` for any other. */
function databaseFileOf(url: string): string | undefined {
  if (!url.startsWith("file:")) return undefined;
  const path = (url.slice("file:".length).split("?")[0] as string).replace(/^\/\/(localhost)?(?=\/)/, "");
  return path === "" || path === ":memory:" ? undefined : path;
}

/** Whether process `pid` runs (one that exists but is not ours to signal runs too). */
function running(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

interface Owner {
  pid: number;
  host: string;
}

/** Who a lock file names (`pid host`); `undefined` when it is gone. */
function ownerOf(lock: string): Owner | undefined {
  let text: string;
  try {
    text = readFileSync(lock, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const [pid = "", host = hostname()] = text.trim().split(" ");
  return { pid: Number(pid), host };
}

/** Whether `owner`'s server still runs, as far as this host can tell. */
const alive = (owner: Owner) => owner.host !== hostname() || (owner.pid !== process.pid && running(owner.pid));

/**
 * Locks the database file of `url` for this process; nothing to lock for a URL that names no file. Throws an error
 * that names the other server and the lock file when one holds it.
 */
export function lockDatabase(url: string): DatabaseLock {
  const file = databaseFileOf(url);
  if (file === undefined) return { release() {} };
  const lock = `${file}.lock`;
  // A crashed server's lock is taken over once; found again, another start took it meanwhile.
  for (let attempt = 0; !held.has(lock); attempt++) {
    try {
      writeFileSync(lock, `${process.pid} ${hostname()}\n`, { flag: "wx" });
      held.add(lock);
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          held.delete(lock);
          unlinkSync(lock);
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") {
        throw new Error(`cannot open the database ${url}: no lock file ${lock}: ${(error as Error).message}`);
      }
    }
    const owner = ownerOf(lock);
    if (owner !== undefined && (attempt > 0 || alive(owner))) throw inUse(url, lock, owner);
    if (owner !== undefined) rmSync(lock, { force: true });
  }
  throw inUse(url, lock, { pid: process.pid, host: hostname() });
}

const inUse = (url: string, lock: string, owner: Owner) =>
  new Error(
    `the database ${url} is in use by another runcode serve (pid ${owner.pid} on ${owner.host}, lock file ${lock}): one server owns a database; if no server runs, delete the lock file`,
  );
