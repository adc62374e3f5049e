import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { createCa, issueLeaf, type CertAndKey } from "../../pki";
import { tempDir } from "../helpers/temp-dir";

/** Temp folders for one test file, removed when the file's tests are done. */
export function tempDirs(): () => string {
  return () => tempDir("a2a-pki-test-");
}

export function mode(path: string): number {
  return statSync(path).mode & 0o777;
}

/** Every file under `dir`, relative, for "nothing else was written" checks. */
export function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath ?? (e as unknown as { path: string }).path, e.name).slice(dir.length + 1))
    .sort();
}

/** A CA and two leaves issued by it, plus a leaf from an unrelated CA. */
export async function makeFleet(): Promise<{
  ca: CertAndKey;
  alice: CertAndKey;
  bob: CertAndKey;
  foreignCa: CertAndKey;
  mallory: CertAndKey;
}> {
  const ca = await createCa({ name: "test fleet CA" });
  const foreignCa = await createCa({ name: "foreign CA" });
  return {
    ca,
    alice: await issueLeaf({ ca, name: "alice", sans: ["localhost", "127.0.0.1"] }),
    bob: await issueLeaf({ ca, name: "bob", sans: ["127.0.0.1"] }),
    foreignCa,
    mallory: await issueLeaf({ ca: foreignCa, name: "bob", sans: ["127.0.0.1"] }),
  };
}

export const DAY_MS = 86_400_000;
