import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { randomBytes } from "node:crypto";
import { basename, dirname, join } from "node:path";
import { PkiError, pkiErrors } from "./errors";

/** File modes used by the PKI: private keys (and bundles, which carry one) vs public certificates. */
export const SECRET_MODE = 0o600;
export const PUBLIC_MODE = 0o644;

export interface WriteOptions {
  mode: number;
  /** Replace an existing file. Off by default: keys and certificates are never overwritten unasked. */
  overwrite?: boolean;
  /** The error to throw when the target exists and overwrite is off (default FILE_EXISTS). */
  onExists?: (path: string) => PkiError;
}

/**
 * Writes `data` to `path` so that readers see either no file or the whole file, never a partial one.
 *
 * The data goes to a temp file in the same folder (same filesystem, so the final step is atomic), created
 * with O_EXCL and the final mode from the first byte (a key is never briefly world-readable), and fsynced.
 * Without `overwrite`, `link()` publishes it: it fails with EEXIST if the target appeared meanwhile, which
 * a check-then-rename would miss. With `overwrite`, `rename()` replaces the target. The folder is fsynced
 * so the new name survives a crash.
 *
 * @example writeFileAtomic(paths.nodeKey, keyPem, { mode: SECRET_MODE, onExists: pkiErrors.keyExists })
 */
export function writeFileAtomic(path: string, data: string | Uint8Array, opts: WriteOptions): void {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  const fd = openSync(tmp, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, opts.mode);
  try {
    try {
      // The mode given to open() is filtered by the umask; set it exactly so certs are 0644 everywhere.
      fchmodSync(fd, opts.mode);
      writeFileSync(fd, data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    if (opts.overwrite) renameSync(tmp, path);
    else {
      try {
        linkSync(tmp, path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "EEXIST") throw (opts.onExists ?? pkiErrors.fileExists)(path);
        throw err;
      }
    }
  } finally {
    rmSync(tmp, { force: true });
  }
  fsyncDir(dir);
}

/** Syncs a folder, so the names made, renamed or removed in it survive an OS crash or a power loss. */
export function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, constants.O_RDONLY);
    fsyncSync(fd);
  } catch (err) {
    // Some platforms cannot open or fsync a directory; the file itself is already durable.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "EISDIR" && code !== "EINVAL" && code !== "EPERM" && code !== "EBADF") throw err;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Reads a private key file, refusing one that group or others may read: a leaked node key lets anyone
 * act as this node. Permissions are checked on the opened descriptor, so the file cannot be swapped
 * between the check and the read. Error messages name the path, never the content.
 */
export function readSecret(path: string): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY);
  } catch (err) {
    throw pkiErrors.readFailed(path, (err as NodeJS.ErrnoException).code ?? "unknown error");
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw pkiErrors.readFailed(path, "not a regular file");
    if ((st.mode & 0o077) !== 0) throw pkiErrors.insecurePermissions(path, st.mode);
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}

/** Reads a public file (a certificate), turning OS errors into a PkiError that names the path. */
export function readPublic(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    throw pkiErrors.readFailed(path, (err as NodeJS.ErrnoException).code ?? "unknown error");
  }
}
