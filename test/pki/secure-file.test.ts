import { describe, expect, it } from "vitest";
import { chmodSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PUBLIC_MODE, SECRET_MODE, pkiErrors, readSecret, writeFileAtomic } from "../../pki";
import { mode, tempDirs } from "./helpers";

const tmp = tempDirs();

describe("writeFileAtomic", () => {
  it("writes with the exact mode asked for and leaves no temp file", () => {
    const dir = tmp();
    const umask = process.umask(0o077); // a strict umask must not turn certificates into 0600
    try {
      writeFileAtomic(join(dir, "node.key"), "secret\n", { mode: SECRET_MODE });
      writeFileAtomic(join(dir, "node.crt"), "public\n", { mode: PUBLIC_MODE });
    } finally {
      process.umask(umask);
    }
    expect(mode(join(dir, "node.key"))).toBe(0o600);
    expect(mode(join(dir, "node.crt"))).toBe(0o644);
    expect(readFileSync(join(dir, "node.key"), "utf8")).toBe("secret\n");
    expect(readdirSync(dir).sort()).toEqual(["node.crt", "node.key"]);
  });

  it("refuses to overwrite: the old content stays and the temp file is removed", () => {
    const dir = tmp();
    const path = join(dir, "node.key");
    writeFileAtomic(path, "original", { mode: SECRET_MODE });
    expect(() => writeFileAtomic(path, "replacement", { mode: SECRET_MODE })).toThrow(
      expect.objectContaining({ code: "FILE_EXISTS", message: `refusing to overwrite ${path}: it already exists` }),
    );
    expect(() => writeFileAtomic(path, "replacement", { mode: SECRET_MODE, onExists: pkiErrors.keyExists })).toThrow(
      expect.objectContaining({ code: "KEY_EXISTS" }),
    );
    expect(readFileSync(path, "utf8")).toBe("original");
    expect(readdirSync(dir)).toEqual(["node.key"]);
  });

  it("replaces atomically when asked, keeping the new mode", () => {
    const dir = tmp();
    const path = join(dir, "bundle.json");
    writeFileSync(path, "old", { mode: 0o644 });
    writeFileAtomic(path, "new", { mode: SECRET_MODE, overwrite: true });
    expect(readFileSync(path, "utf8")).toBe("new");
    expect(mode(path)).toBe(0o600);
    expect(readdirSync(dir)).toEqual(["bundle.json"]);
  });

  it("fails cleanly when the folder does not exist", () => {
    const dir = tmp();
    expect(() => writeFileAtomic(join(dir, "missing", "x"), "data", { mode: SECRET_MODE })).toThrow(/ENOENT/);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe("readSecret", () => {
  it("reads a 0600 key", () => {
    const path = join(tmp(), "node.key");
    writeFileAtomic(path, "k", { mode: SECRET_MODE });
    expect(readSecret(path)).toBe("k");
  });

  it.each([0o640, 0o604, 0o644, 0o660])("refuses mode %o with INSECURE_PERMISSIONS and a chmod hint", (m) => {
    const path = join(tmp(), "node.key");
    writeFileSync(path, "-----BEGIN PRIVATE KEY-----\nSECRETBYTES\n");
    chmodSync(path, m);
    try {
      readSecret(path);
      expect.unreachable("readSecret accepted an insecure key");
    } catch (err) {
      expect(err).toMatchObject({ code: "INSECURE_PERMISSIONS", hint: `chmod 600 ${path}` });
      expect((err as Error).message).toContain(path);
      expect((err as Error).message).not.toContain("SECRETBYTES");
    }
  });

  it("reports a missing key as READ_FAILED naming the path", () => {
    const path = join(tmp(), "absent.key");
    expect(() => readSecret(path)).toThrow(
      expect.objectContaining({ code: "READ_FAILED", message: `cannot read ${path}: ENOENT` }),
    );
  });
});
