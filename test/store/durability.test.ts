/**
 * The durability setting reaches SQLite: from the flag, the environment or the config file, through the
 * storage the daemon opens (openStorage, as src/node.ts calls it), to the connection's `synchronous` pragma,
 * read back from the real file's connection. Bad values are refused naming where they came from and the levels.
 */
import { afterEach, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfigFile, resolveSettings } from "../../src/config";
import { createLogger } from "../../src/log";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { DURABILITY_LEVELS } from "../../src/store/durability";
import { openStorage, type Storage } from "../../src/store/storage";
import { tempDir } from "../helpers/temp-dir";

/** SQLite's numbering of the `synchronous` pragma. */
const NORMAL = 1;
const FULL = 2;

const synchronous = (db: OpenDatabase) =>
  (db.sqlite.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
const journalMode = (db: OpenDatabase) =>
  (db.sqlite.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode;

const opened: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0)) await o.close();
});

async function storageWith(durability: string | undefined): Promise<Storage> {
  const storage = await openStorage({
    path: join(tempDir("a2a-durability-"), "a2a-node.db"),
    maxListBytes: 1 << 20,
    leaseMs: 30_000,
    log: createLogger(() => {}),
    durability: durability as never,
  });
  opened.push(storage);
  return storage;
}

const config = (...args: Parameters<typeof resolveSettings>) => resolveSettings(...args).config;

describe("durability", () => {
  it("the levels are process-crash and fsync", () => {
    expect(DURABILITY_LEVELS).toEqual(["process-crash", "fsync"]);
  });

  it("the default, process-crash, runs the WAL with synchronous=NORMAL", async () => {
    expect(config({}, {}).durability).toBe("process-crash");
    const storage = await storageWith(config({}, {}).durability);
    expect(synchronous(storage.local)).toBe(NORMAL);
    expect(journalMode(storage.local)).toBe("wal");
  });

  it.each([
    ["the flag", () => config({ durability: "fsync" }, {})],
    ["the environment", () => config({}, { A2A_NODE_DURABILITY: "fsync" })],
    [
      "the config file",
      () => {
        const path = join(tempDir("a2a-durability-"), "config.toml");
        writeFileSync(path, 'durability = "fsync"\n');
        return config({}, {}, loadConfigFile(path, true));
      },
    ],
  ])("fsync from %s reaches the daemon's SQLite connection as synchronous=FULL, still in WAL mode", async (_, read) => {
    const c = read();
    expect(c.durability).toBe("fsync");
    const storage = await storageWith(c.durability);
    expect(synchronous(storage.local)).toBe(FULL);
    expect(journalMode(storage.local)).toBe("wal");
  });

  it("a connection opened without the daemon's storage takes the level it is given", () => {
    const path = join(tempDir("a2a-durability-"), "a2a-node.db");
    const full = openDatabase(path, { durability: "fsync" });
    opened.push(full);
    expect(synchronous(full)).toBe(FULL);
    const normal = openDatabase(path);
    opened.push(normal);
    expect(synchronous(normal)).toBe(NORMAL);
  });

  it.each([
    [{ durability: "full" }, {}, "--durability must be one of process-crash, fsync (got 'full')"],
    [{ durability: "" }, {}, "--durability must be one of process-crash, fsync (got '')"],
    [{}, { A2A_NODE_DURABILITY: "FSYNC" }, "A2A_NODE_DURABILITY must be one of process-crash, fsync (got 'FSYNC')"],
  ])("flags %j, environment %j are refused: %s", (flags, env, message) => {
    expect(() => config(flags, env)).toThrow(message);
  });

  it.each([
    ['durability = "power-loss"\n', "durability must be one of process-crash, fsync (got 'power-loss')"],
    ["durability = true\n", "durability must be a string (got true)"],
  ])("the config file's %j is refused, naming the file and the key", (text, message) => {
    const path = join(tempDir("a2a-durability-"), "bad.toml");
    writeFileSync(path, text);
    expect(() => config({}, {}, loadConfigFile(path, true))).toThrow(`config file ${path}: ${message}`);
  });
});
