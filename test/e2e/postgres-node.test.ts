/**
 * The compiled binary on a Postgres database (--database): tasks go there instead of the home's SQLite file,
 * survive a restart, and the URL's password never reaches the output.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SQL } from "bun";
import { runBinary, serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { freshDatabase, type TestDatabase } from "../helpers/postgres";
import { rpc, userMessage } from "../helpers/rpc";

let fleet: Fleet;
let alpha: TlsIdentity;
let db: TestDatabase;
let node: ServedBinary | undefined;

beforeAll(async () => {
  fleet = await makeFleet(["beta", "alpha"]);
  alpha = fleet.identity("alpha");
  db = await freshDatabase("e2e");
});

afterAll(async () => {
  await node?.stop("SIGKILL");
  fleet?.cleanup();
  await db?.drop();
});

const password = () => decodeURIComponent(new URL(db.url).password);

describe("a node on Postgres", () => {
  it("serve --check shows the database URL without its password, in text and JSON", async () => {
    const text = await runBinary(["--home", fleet.homes.beta, "serve", "--database", db.url, "--check"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/database_url = "postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/e2e_[0-9a-f]+"\s+# flag/);
    expect(text.stdout).not.toContain(password());
    const json = await runBinary(["--home", fleet.homes.beta, "serve", "--check", "--json"], { A2A_NODE_DATABASE_URL: db.url });
    expect(json.code, json.stderr).toBe(0);
    const parsed = JSON.parse(json.stdout);
    expect(parsed.databaseUrl).toContain("postgres://postgres:***@127.0.0.1:");
    expect(parsed.sources.databaseUrl).toBe("A2A_NODE_DATABASE_URL");
    expect(json.stdout).not.toContain(password());
  });

  it("refuses a database URL that is not postgres://, naming the flag and hiding the password", async () => {
    const r = await runBinary(["--home", fleet.homes.beta, "serve", "--database", "mysql://root:hunter2@db/x", "--check"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--database must be a postgres:// URL (got 'mysql://root:***@db/x')");
    expect(r.stderr).not.toContain("hunter2");
  });

  it("stops at start, saying which server it could not use, when the database is unreachable", async () => {
    const bad = new URL(db.url);
    bad.password = "not-the-password";
    const r = await runBinary(["--home", fleet.homes.beta, "serve", "--host", "127.0.0.1", "--port", "0", "--database", bad.href]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("cannot use the Postgres database postgres://postgres:***@127.0.0.1:");
    expect(r.stderr).not.toContain("not-the-password");
  });

  it("keeps tasks in Postgres (not the home's SQLite), across a restart", async () => {
    node = await serveBinary(fleet.homes.beta, ["--executor", "echo", "--database", db.url]);
    const serving = node.log().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === "serving A2A over mTLS");
    expect(serving?.database).toMatch(/^postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\//);
    expect(node.log()).not.toContain(password());
    const sent = await rpc(node.url, alpha, "SendMessage", { message: userMessage("hello postgres") });
    expect(sent.body.result?.task?.status?.state, sent.text).toBe("TASK_STATE_COMPLETED");
    const id = sent.body.result.task.id as string;

    const sql = new SQL(db.url, { max: 1 });
    try {
      const [row] = await sql`SELECT owner, state FROM tasks WHERE id = ${id}`;
      expect(row).toEqual({ owner: "alpha", state: "TASK_STATE_COMPLETED" });
      const [events] = await sql`SELECT count(*)::int AS n FROM task_events WHERE task_id = ${id}`;
      expect(events.n).toBeGreaterThan(0);
    } finally {
      await sql.close();
    }

    expect(await node.stop()).toBe(0);
    node = await serveBinary(fleet.homes.beta, ["--executor", "echo", "--database", db.url]);
    const got = await rpc(node.url, alpha, "GetTask", { id });
    expect(got.body.result?.artifacts?.[0]?.parts?.[0]?.text).toBe("hello postgres");
    const listed = await rpc(node.url, alpha, "ListTasks", {});
    expect(listed.body.result.tasks.map((t: { id: string }) => t.id)).toEqual([id]);
    // The same home without --database has its own (empty) SQLite task list.
    await node.stop();
    node = await serveBinary(fleet.homes.beta, ["--executor", "echo"]);
    expect((await rpc(node.url, alpha, "GetTask", { id })).body.error?.code).toBe(-32001);
  });
});
