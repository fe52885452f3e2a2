// The node agent's files. The manifest as found is kept as `<BACKUP_DIR>/<KEY>.yaml`, once per idempotency key,
// written under a dot name first and renamed, so a half-written backup is never trusted. The manifest is never
// written in place: the new content goes to `.<manifest name>.auo-<KEY>` in the manifests folder — the kubelet's
// file source skips names starting with "." (kubernetes pkg/kubelet/config: the directory listing skips dot
// names, the inotify handler drops them) — and is renamed onto the manifest: a rename within one folder, atomic,
// so the kubelet reads the old file or the new one, never half of one. All synchronous: a signal handler runs
// between two of these calls, never inside one.
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
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

/** Writes `data` to `temp` (synced), then renames it onto `target`. */
function replaceAtomically(temp: string, target: string, data: Buffer | string): void {
  const fd = openSync(temp, 'w', 0o600);
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
  replaceAtomically(p.manifestTemp, p.manifest, readFileSync(p.backup));
}

/** Removes the temporary files, whatever happened. */
export function removeTemps(p: Paths): void {
  for (const f of [p.manifestTemp, p.backupTemp]) rmSync(f, { force: true });
}
