// The node agent's files. The manifest as found is kept as `<BACKUP_DIR>/<KEY>.yaml`, once per idempotency key,
// written under a dot name first and renamed, so a half-written backup is never trusted. The manifest is never
// written in place: the new content goes to `.<manifest name>.auo-<KEY>` in the manifests folder — the kubelet's
// file source skips names starting with "." (kubernetes pkg/kubelet/config: the directory listing skips dot
// names, the inotify handler drops them) — and is renamed onto the manifest: a rename within one folder, atomic,
// so the kubelet reads the old file or the new one, never half of one. All synchronous: a signal handler runs
// between two of these calls, never inside one.
//
// The agent writes no other file: each temporary name is removed first and then created new (O_CREAT|O_EXCL, which
// follows no link), so a file or a link left at that name is never written through; the manifest and the backup
// are read only as regular files (no link followed) of at most MANIFEST_MAX_BYTES; the termination message goes
// only into a file that is already there, regular and empty (the kubelet's), and is never created or truncated.
import { closeSync, constants, existsSync, fstatSync, fsyncSync, mkdirSync, openSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

export interface Paths {
  manifest: string;
  backup: string;
  /** The backup's temporary name, in BACKUP_DIR. */
  backupTemp: string;
  /** The new manifest's temporary name, in the manifests folder. */
  manifestTemp: string;
}

export function pathsOf(manifest: string, backupDir: string, key: string): Paths {
  return {
    manifest,
    backup: join(backupDir, `${key}.yaml`),
    backupTemp: join(backupDir, `.${key}.yaml.tmp`),
    manifestTemp: join(dirname(manifest), `.${basename(manifest)}.auo-${key}`),
  };
}

/** The largest manifest (and backup) the agent reads; kubeadm's kube-apiserver manifest is about 4 KiB. */
export const MANIFEST_MAX_BYTES = 1024 * 1024;

/**
 * The bytes of a regular file of at most `max` bytes, read without following a link; `error` when `path` is not
 * one (a link, a folder, a device, a fifo, too big) or cannot be opened.
 */
export function readRegularFile(path: string, max = MANIFEST_MAX_BYTES): { data: Buffer } | { error: string } {
  let fd: number;
  try {
    // O_NONBLOCK: opening a fifo does not wait for a writer (it is refused below).
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    return { error: `cannot be opened as a file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { error: 'is not a regular file' };
    if (st.size > max) return { error: `is larger than ${max} bytes (${st.size})` };
    // One byte more than allowed: a file that grew since the fstat is refused, not cut.
    const buf = Buffer.alloc(max + 1);
    let size = 0;
    for (;;) {
      const n = readSync(fd, buf, size, buf.length - size, null);
      if (n === 0) break;
      size += n;
      if (size > max) return { error: `is larger than ${max} bytes` };
    }
    return { data: buf.subarray(0, size) };
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes `message` into the termination message file at `path` when that file is already there, is a regular
 * file (not a link) and is empty, as the kubelet makes it for each container; anything else is left alone (never
 * created, never truncated). True when written.
 */
export function writeTerminationMessage(path: string, message: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return false;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size !== 0) return false;
    writeSync(fd, Buffer.from(message));
    return true;
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}

/** Writes `data` to `temp` (a new file, synced), then renames it onto `target`. */
function replaceAtomically(temp: string, target: string, data: Buffer | string): void {
  // A leftover of a stopped run (or anything else at that name) goes first: the temp file is always a new file.
  rmSync(temp, { force: true });
  const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, target);
}

/** Keeps `found` (the manifest's bytes as read) as the key's backup, unless the key has one already. */
export function keepBackup(p: Paths, backupDir: string, found: Buffer): void {
  mkdirSync(backupDir, { recursive: true });
  if (!existsSync(p.backup)) replaceAtomically(p.backupTemp, p.backup, found);
}

export function replaceManifest(p: Paths, text: string): void {
  replaceAtomically(p.manifestTemp, p.manifest, text);
}

/** Puts the backup back, the same atomic way. */
export function restoreBackup(p: Paths): void {
  const backup = readRegularFile(p.backup);
  if ('error' in backup) throw new Error(`the backup ${p.backup} ${backup.error}`);
  replaceAtomically(p.manifestTemp, p.manifest, backup.data);
}

/** Removes the temporary files, whatever happened. */
export function removeTemps(p: Paths): void {
  for (const f of [p.manifestTemp, p.backupTemp]) rmSync(f, { force: true });
}
