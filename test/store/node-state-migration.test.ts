/**
 * The migration that gives tasks a node state of their own (SQLite 0009, Postgres 0004), on a database made by
 * the migrations before it: tasks not yet ended keep the keys the node used to note in their metadata (a Hermes
 * run's id, a pending approval, restarts, extensions, the auth retry), so an upgrade mid-task re-attaches and
 * retries as before; ended tasks, and every key a caller wrote, are left out.
 */
import { SQL } from "bun";
import { Database } from "bun:sqlite";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { applyMigrations } from "../../src/store/migrate";
import { migrations } from "../../src/store/migrations.gen";
import { applyPostgresMigrations } from "../../src/store/postgres/database";
import { migrations as pgMigrations } from "../../src/store/postgres/migrations.gen";
import { freshDatabase } from "../helpers/postgres";
import { tempDir } from "../helpers/temp-dir";

const NOTED = {
  "hermes/runId": "run_1",
  "hermes/pendingApproval": { command: "rm -rf /tmp/x", choices: ["once", "deny"] },
  "a2a-node/restarts": 1,
  "a2a-node/extensions": ["urn:x"],
  "a2a-node/auth-required": null,
};
/** Tasks as a node before the migration stored them: id, state, metadata (JSON text or null). */
const BEFORE: [string, string, string | null][] = [
  ["u1", "TASK_STATE_WORKING", JSON.stringify({ note: "the caller's own", ...NOTED })],
  ["u2", "TASK_STATE_INPUT_REQUIRED", JSON.stringify({ note: "nothing the node noted" })],
  ["u3", "TASK_STATE_COMPLETED", JSON.stringify({ "hermes/runId": "run_3" })],
  ["u4", "TASK_STATE_AUTH_REQUIRED", JSON.stringify({ "a2a-node/auth-required": { messageId: "m" } })],
  ["u5", "TASK_STATE_SUBMITTED", null],
];
const AFTER = { u1: NOTED, u2: null, u3: null, u4: { "a2a-node/auth-required": { messageId: "m" } }, u5: null };

describe("the node state migration", () => {
  it("SQLite (0009): unfinished tasks keep what the node noted; the metadata is left as it was", () => {
    const dir = tempDir("a2a-node-state-");
    const sqlite = new Database(join(dir, "a.db"), { create: true, strict: true });
    try {
      const upTo = migrations.findIndex((m) => m.tag === "0009_task_node_state");
      expect(upTo).toBeGreaterThan(0);
      applyMigrations(sqlite, migrations.slice(0, upTo));
      const insert = sqlite.prepare(
        `INSERT INTO tasks (id, context_id, owner, state, status_timestamp, request_message_id, executor, history, artifacts, created_at, updated_at, metadata)
         VALUES (?1, 'c', 'alpha', ?2, 't', ?1, 'hermes', '[]', '[]', 't', 't', ?3)`,
      );
      for (const [id, state, metadata] of BEFORE) insert.run(id, state, metadata);
      expect(applyMigrations(sqlite, migrations)).toEqual(migrations.slice(upTo).map((m) => m.tag));
      const rows = sqlite.query("SELECT id, metadata, node_state FROM tasks ORDER BY id").all() as {
        id: keyof typeof AFTER;
        metadata: string | null;
        node_state: string | null;
      }[];
      expect(
        Object.fromEntries(rows.map((r) => [r.id, r.node_state === null ? null : JSON.parse(r.node_state)])),
      ).toEqual(AFTER);
      expect(rows.map((r) => r.metadata)).toEqual(BEFORE.map(([, , m]) => m));
    } finally {
      sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("Postgres (0004): the same", async () => {
    const db = await freshDatabase("nodestate");
    const sql = new SQL(db.url, { max: 1 });
    try {
      const upTo = pgMigrations.findIndex((m) => m.tag === "0004_task_node_state");
      expect(upTo).toBeGreaterThan(0);
      await applyPostgresMigrations(sql, pgMigrations.slice(0, upTo));
      for (const [id, state, metadata] of BEFORE)
        await sql`INSERT INTO tasks (id, context_id, owner, state, status_timestamp, request_message_id, executor, created_at, updated_at, history, artifacts, metadata)
                  VALUES (${id}, 'c', 'alpha', ${state}, 't', ${id}, 'hermes', 't', 't', '[]', '[]', ${metadata})`;
      expect(await applyPostgresMigrations(sql, pgMigrations)).toEqual(pgMigrations.slice(upTo).map((m) => m.tag));
      const rows = (await sql`SELECT id, metadata, node_state FROM tasks ORDER BY id`) as {
        id: keyof typeof AFTER;
        metadata: string | null;
        node_state: string | null;
      }[];
      expect(
        Object.fromEntries(rows.map((r) => [r.id, r.node_state === null ? null : JSON.parse(r.node_state)])),
      ).toEqual(AFTER);
      expect(rows.map((r) => r.metadata)).toEqual(BEFORE.map(([, , m]) => m));
    } finally {
      await sql.close();
      await db.drop();
    }
  });
});
