/**
 * The compiled binary on a Postgres database (--database): tasks go there instead of the home's SQLite file,
 * survive a restart, and the URL's password never reaches the output; /health/ready's database check and the
 * tasks-by-state gauge read Postgres, not the home's SQLite file.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SQL } from "bun";
import { runBinary, serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { freshDatabase, type TestDatabase } from "../helpers/postgres";
import { scrape } from "../helpers/metrics";
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
    expect(text.stdout).toMatch(
      /database_url = "postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/e2e_[0-9a-f]+"\s+# flag/,
    );
    expect(text.stdout).not.toContain(password());
    const json = await runBinary(["--home", fleet.homes.beta, "serve", "--check", "--json"], {
      A2A_NODE_DATABASE_URL: db.url,
    });
    expect(json.code, json.stderr).toBe(0);
    const parsed = JSON.parse(json.stdout);
    expect(parsed.databaseUrl).toContain("postgres://postgres:***@127.0.0.1:");
    expect(parsed.sources.databaseUrl).toBe("A2A_NODE_DATABASE_URL");
    expect(json.stdout).not.toContain(password());
  });

  it("refuses a database URL that is not postgres://, naming the flag and hiding the password", async () => {
    const r = await runBinary([
      "--home",
      fleet.homes.beta,
      "serve",
      "--database",
      "mysql://root:hunter2@db/x",
      "--check",
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--database must be a postgres:// URL (got 'mysql://root:***@db/x')");
    expect(r.stderr).not.toContain("hunter2");
  });

  it("stops at start, saying which server it could not use, when the database is unreachable", async () => {
    const bad = new URL(db.url);
    bad.password = "not-the-password";
    const r = await runBinary([
      "--home",
      fleet.homes.beta,
      "serve",
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--database",
      bad.href,
    ]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("cannot use the Postgres database postgres://postgres:***@127.0.0.1:");
    expect(r.stderr).not.toContain("not-the-password");
  });

  it("keeps tasks in Postgres (not the home's SQLite), across a restart", async () => {
    node = await serveBinary(fleet.homes.beta, ["--executor", "echo", "--database", db.url]);
    const serving = node
      .log()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === "serving A2A over mTLS");
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

  it("checks Postgres for /health/ready and counts Postgres's tasks in a2a_node_tasks", async () => {
    await node?.stop();
    node = await serveBinary(fleet.homes.beta, ["--executor", "echo", "--database", db.url, "--admin-port", "0"]);
    const admin = (await node.waitForLine({ msg: /^admin port open/ })).url as string;
    const sql = new SQL(db.url, { max: 2 });
    try {
      await sql`DELETE FROM tasks`;
      const sent = await rpc(node.url, alpha, "SendMessage", { message: userMessage("counted") });
      expect(sent.body.result?.task?.status?.state, sent.text).toBe("TASK_STATE_COMPLETED");
      // A task only the database holds (another replica's): the gauge counts it too.
      await sql`INSERT INTO tasks (id, context_id, owner, state, status_timestamp, executor, created_at, updated_at, history, artifacts)
        VALUES ('01ELSEWHERE0000000000000000', 'c', 'gamma', 'TASK_STATE_REJECTED', '2026-01-01T00:00:00Z', 'echo', 't', 't', '[]', '[]')`;
      const metrics = await scrape(admin);
      expect(metrics.value('a2a_node_tasks{state="TASK_STATE_COMPLETED"}')).toBe(1);
      expect(metrics.value('a2a_node_tasks{state="TASK_STATE_REJECTED"}')).toBe(1);

      const ok = await fetch(`${admin}/health/ready`);
      const body = (await ok.json()) as { checks: { database: { ok: boolean; detail: string } } };
      expect(ok.status).toBe(200);
      expect(body.checks.database.ok).toBe(true);
      expect(body.checks.database.detail).toMatch(
        /^a write to postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/e2e_[0-9a-f]+ committed$/,
      );
      const [probe] = await sql`SELECT checked_at FROM health_probe WHERE id = 1`;
      expect(Date.now() - Date.parse(probe.checked_at)).toBeLessThan(60_000);

      // A database that takes no write (the probe's row locked by another session): not ready, saying so.
      const locked = await sql.reserve();
      try {
        await locked`BEGIN`;
        await locked`LOCK TABLE health_probe IN ACCESS EXCLUSIVE MODE`;
        const stuck = await fetch(`${admin}/health/ready`);
        const why = (await stuck.json()) as { failed: string[]; checks: { database: { ok: boolean; detail: string } } };
        expect(stuck.status).toBe(503);
        expect(why.failed).toEqual(["database"]);
        expect(why.checks.database.detail).toMatch(
          /^a write to postgres:\/\/postgres:\*\*\*@.* failed: the database did not answer within 3 s$/,
        );
        await locked`ROLLBACK`;
      } finally {
        locked.release();
      }
      expect((await fetch(`${admin}/health/ready`)).status).toBe(200);
      expect(node.log()).not.toContain(password());
    } finally {
      await sql.close();
    }
  });
});

describe("doctor on a Postgres node", () => {
  const doctor = async (env: Record<string, string> = {}) => {
    const r = await runBinary(["--home", fleet.homes.beta, "doctor", "--json", "--timeout", "5"], env);
    expect(r.stderr).toBe("");
    expect(r.stdout).not.toContain(password());
    const checks = JSON.parse(r.stdout).checks as { check: string; status: string; detail: string; fix?: string }[];
    return { code: r.code, by: (check: string) => checks.filter((c) => c.check === check) };
  };

  it("running with --database: the database is Postgres as the node sees it, beside the home's own file", async () => {
    await node?.stop();
    node = await serveBinary(fleet.homes.beta, ["--executor", "echo", "--database", db.url]);
    const f = await doctor();
    expect(f.by("database")).toEqual([
      expect.objectContaining({
        status: "ok",
        detail: expect.stringMatching(
          /^Postgres postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/e2e_[0-9a-f]+: a write to .* committed \(as the running node sees it\)$/,
        ),
      }),
    ]);
    expect(f.by("home database")[0].status).toBe("ok");
    expect(f.by("node")[0].detail).toMatch(/tasks in Postgres postgres:\/\/postgres:\*\*\*@/);
    await node.stop();
    node = undefined;
  });

  it("not running, database_url in its settings: doctor asks Postgres itself, and says what is wrong with it", async () => {
    const f = await doctor({ A2A_NODE_DATABASE_URL: db.url });
    expect(f.by("database")).toEqual([
      expect.objectContaining({
        status: "ok",
        detail: expect.stringMatching(
          /^Postgres postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/e2e_[0-9a-f]+ answers and takes writes$/,
        ),
      }),
    ]);
    const wrong = new URL(db.url);
    wrong.password = "not-the-password";
    const refused = await doctor({ A2A_NODE_DATABASE_URL: wrong.href });
    expect(refused.code).toBe(1);
    expect(refused.by("database")[0]).toMatchObject({
      status: "fail",
      fix: expect.stringContaining("check the user and password in database_url"),
    });
    const missing = new URL(db.url);
    missing.pathname = "/no_such_database";
    const gone = await doctor({ A2A_NODE_DATABASE_URL: missing.href });
    expect(gone.by("database")[0]).toMatchObject({
      status: "fail",
      detail: expect.stringContaining("no_such_database"),
      fix: expect.stringContaining("create the database"),
    });
  });
});
