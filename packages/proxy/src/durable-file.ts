// Replaces a file so that a crash or a power loss leaves either the old contents or the new ones.
// Rename alone is atomic against a process crash, but not durable: after a power loss the rename can
// reach the disk before the data (a zero-length file), or be lost with the directory entry. So the
// data is synced before the rename, and the directory after it. The LB answers the console only once
// this returns: a token rotation it acknowledged survives a reboot.
import { closeSync, fchmodSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname } from "node:path";

export function writeFileDurably(path: string, data: string, mode = 0o644): void {
  const directory = dirname(path);
  mkdirSync(directory, { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  const fd = openSync(temporary, "w", mode);
  try {
    // A temporary file left by an earlier crash keeps its old mode: `mode` applies to new files only.
    fchmodSync(fd, mode);
    // writeSync may write less than asked (a disk filling up): the rest follows, or the error throws
    // before the rename, and the old file stays.
    const bytes = Buffer.from(data, "utf8");
    for (let written = 0; written < bytes.length; ) written += writeSync(fd, bytes, written, bytes.length - written);
    fsyncSync(fd);
  } catch (cause) {
    closeSync(fd);
    rmSync(temporary, { force: true });
    throw cause;
  }
  closeSync(fd);
  renameSync(temporary, path);
  syncDirectory(directory);
}

/** Makes a rename in `directory` durable. Some platforms cannot open or sync a directory; there the
 * rename stands as the file system keeps it. */
function syncDirectory(directory: string): void {
  let fd: number;
  try {
    fd = openSync(directory, "r");
  } catch {
    return;
  }
  try {
    fsyncSync(fd);
  } catch {
    // EINVAL/EISDIR on file systems that do not sync directories: nothing more to do.
  } finally {
    closeSync(fd);
  }
}
