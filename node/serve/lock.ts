/**
 * One server per database file: `runcode serve` holds `<file>.lock`, made with `O_EXCL` and holding its pid, for as
 * long as it runs. A second start on the same file finds the lock and exits; a lock whose pid no longer runs was left
 * by a server that crashed, and is taken over. A libSQL server (`libsql://`) has no file here to lock: one server
 * per database is then the deployment's to keep (docs/deploy.md).
 * @module
 */
import { readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";

/** Lock files this process holds: a second server in the same process is refused as another's would be. */
const held = new Set<string>();

export interface DatabaseLock {
  /** Removes the lock file (once). */
  release(): void;
}

/** The file of a `file:` URL (`file:runcode.db`, `file:///srv/runcode.db?mode=rwc`); `undefined` for any other. */
export function databaseFileOf(url: string): string | undefined {
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

/** The pid a lock file holds; `undefined` when it is gone. */
function ownerOf(lock: string): number | undefined {
  try {
    return Number(readFileSync(lock, "utf8").trim());
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

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
      writeFileSync(lock, `${process.pid}\n`, { flag: "wx" });
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
    if (owner !== undefined && (attempt > 0 || running(owner))) throw inUse(url, lock, owner);
    if (owner !== undefined) rmSync(lock, { force: true });
  }
  throw inUse(url, lock, process.pid);
}

const inUse = (url: string, lock: string, owner: number) =>
  new Error(
    `the database ${url} is in use by another runcode serve (pid ${owner}, lock file ${lock}): one server owns a database; if no server runs, delete the lock file`,
  );
