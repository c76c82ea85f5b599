/**
 * A session kept in a file, as `runcode run --session FILE` and the REPL's `.save` and `.load` keep it: the file is
 * the session's snapshot (`session.snapshot()`), nothing else. It is replaced atomically (written whole to a
 * temporary file beside it, flushed, then renamed over it), so a crash or a failed write leaves the previous state;
 * a file that is not a snapshot, or one made with other settings, is refused with a message naming the file, and
 * left as it is.
 * @module
 */
import { randomBytes } from "node:crypto";
import { open, readFile, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { SessionError } from "./index.js";

/** The contents of `path`, or `undefined` when there is no such file. */
export async function readSessionFile(path: string): Promise<Uint8Array | undefined> {
  try {
    return new Uint8Array(await readFile(path));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * What to tell the user when the snapshot of `path` could not be restored, naming the file: a `SessionError` the
 * restore refused it with (compared by name: the REPL's arrives from its thread as a copy) says why; any other
 * failure of the restore is taken as bytes it could not read.
 */
export function restoreRefusal(path: string, error: unknown): string {
  const { name, code, message } = (error ?? {}) as Partial<SessionError>;
  if (name === "SessionError" && code === "snapshot_mismatch") {
    return `${path} was saved with other settings: give the same --web-apis, --allow-fetch and --memory as when it was made (${message})`;
  }
  return `${path} is not a runcode session snapshot, or not one of this version (${message}); it is left as it is`;
}

/** Replaces `path` with `bytes` atomically; readable by its owner only, as a session may hold secrets. */
export async function writeSessionFile(path: string, bytes: Uint8Array): Promise<void> {
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    const file = await open(temporary, "wx", 0o600);
    try {
      await file.writeFile(bytes);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
