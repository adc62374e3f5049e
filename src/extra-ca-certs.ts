import { accessSync, constants } from "node:fs";

/**
 * Bun's TLS reads NODE_EXTRA_CA_CERTS with the C library's getenv() the first time it builds its default CA
 * store, and when the file is not there it writes "Warning: Ignoring extra certs from `FILE`, load failed:
 * ..." to stderr, in the middle of a command's output (bun-usockets root_certs.cpp,
 * us_get_root_extra_cert_instances). That happens wherever the variable outlives the file: a minimal system
 * without the ca-certificates package, an environment carried over from another machine (sudo -E, nsenter,
 * a container image). A file that cannot be read adds no certificate either way, so the variable is removed
 * before any TLS: from the C environment (deleting it from process.env does not reach getenv()), and from
 * process.env for the processes we start. A readable file is left for the runtime to use.
 */
export async function dropUnreadableExtraCaCerts(env: Record<string, string | undefined>): Promise<void> {
  const file = env.NODE_EXTRA_CA_CERTS;
  if (file === undefined || readable(file)) return;
  delete env.NODE_EXTRA_CA_CERTS;
  if (process.platform !== "linux") return;
  try {
    // Only here, so no other start of the binary pays for loading the FFI (about 8 ms).
    const { dlopen, FFIType } = await import("bun:ffi");
    const libc = dlopen("libc.so.6", { unsetenv: { args: [FFIType.cstring], returns: FFIType.i32 } });
    try {
      libc.symbols.unsetenv(Buffer.from("NODE_EXTRA_CA_CERTS\0"));
    } finally {
      libc.close();
    }
  } catch {
    // No glibc to call: the runtime's warning is then all that happens.
  }
}

function readable(file: string): boolean {
  if (file === "") return true; // empty: the runtime ignores it without a word
  try {
    accessSync(file, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}
