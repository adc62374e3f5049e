import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { hashCallerToken, matchTokenHash, newCallerToken } from "../../src/auth/caller-tokens";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { CallerTokenExistsError, SqliteCallerTokens } from "../../src/store/sqlite-caller-tokens";
import { tempDir } from "../helpers/temp-dir";

describe("caller tokens", () => {
  it("are 256 random bits behind a recognisable prefix, matched only by their exact hash", () => {
    const a = newCallerToken();
    const b = newCallerToken();
    expect(a).toMatch(/^a2a_[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    const entries = [
      { name: "x", tokenHash: hashCallerToken(a) },
      { name: "y", tokenHash: hashCallerToken(b) },
    ];
    expect(matchTokenHash(a, entries)?.name).toBe("x");
    expect(matchTokenHash(b, entries)?.name).toBe("y");
    expect(matchTokenHash(`${a}x`, entries)).toBeUndefined();
    expect(matchTokenHash("", entries)).toBeUndefined();
    expect(matchTokenHash(a, [{ name: "broken", tokenHash: "abc" }])).toBeUndefined();
  });
});

describe("SqliteCallerTokens", () => {
  let dir: string;
  let db: OpenDatabase;
  let tokens: SqliteCallerTokens;
  beforeEach(() => {
    dir = tempDir("a2a-tokens-");
    db = openDatabase(join(dir, "a2a-node.db"));
    tokens = new SqliteCallerTokens(db.db);
  });
  afterEach(() => {
    db.close();
  });

  it("adds, verifies, replaces and revokes; the file holds the hash, never the token", () => {
    const { token, created } = tokens.add("hermes");
    expect(created.name).toBe("hermes");
    expect(tokens.verify(token)).toEqual(created);
    expect(() => tokens.add("hermes")).toThrow(CallerTokenExistsError);
    const replaced = tokens.add("hermes", { replace: true });
    expect(tokens.verify(token)).toBeUndefined();
    expect(tokens.verify(replaced.token)?.name).toBe("hermes");
    expect(tokens.list().map((t) => t.name)).toEqual(["hermes"]);
    db.sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    const bytes = readFileSync(join(dir, "a2a-node.db"));
    expect(bytes.includes(Buffer.from(replaced.token))).toBe(false);
    expect(bytes.includes(Buffer.from(hashCallerToken(replaced.token)))).toBe(true);
    expect(tokens.revoke("hermes")).toBe(true);
    expect(tokens.revoke("hermes")).toBe(false);
    expect(tokens.verify(replaced.token)).toBeUndefined();
  });
});
