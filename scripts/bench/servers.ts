/**
 * The servers under test, each started in its own process on a loopback port, and the fleet PKI they
 * and the load client share (made by our own binary, so the bench also proves its certificates work with
 * node:https and the SDK).
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { existsSync, readFileSync } from "node:fs";
import type { Subprocess } from "bun";
import { checkAnswer, sendMessageRequest, type Binding, type ClientTls } from "./rpc";
import { freePort, track } from "./proc";
import { homePaths } from "../../src/home";

// From the URL, not `import.meta.dir`: vitest (which tests the report that reads the labels below) has only the URL.
export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const BINARY = join(ROOT, "dist", "a2a-node");
const BUN = process.execPath; // the bench itself runs under Bun

/**
 * a2a-node-rest: the same binary, in a process and home of its own, loaded over HTTP+JSON.
 * a2a-node-postgres / sdk-postgres: tasks in a database each on one durable Postgres server the bench starts.
 * a2a-node-fsync / sdk-sqlite-fsync: SQLite synced at every commit (`durability = "fsync"`, synchronous=FULL),
 * the level that survives a power loss; a2a-node and sdk-sqlite run the default level (synchronous=NORMAL).
 */
export type ServerName =
  | "a2a-node"
  | "a2a-node-rest"
  | "a2a-node-fsync"
  | "a2a-node-postgres"
  | "sdk"
  | "sdk-sqlite"
  | "sdk-sqlite-fsync"
  | "sdk-postgres"
  | "bare";
export const SERVER_NAMES: ServerName[] = [
  "a2a-node",
  "a2a-node-rest",
  "a2a-node-fsync",
  "a2a-node-postgres",
  "sdk",
  "sdk-sqlite",
  "sdk-sqlite-fsync",
  "sdk-postgres",
  "bare",
];
export const SERVER_LABELS: Record<ServerName, string> = {
  "a2a-node": "a2a-node (SQLite)",
  "a2a-node-rest": "a2a-node HTTP+JSON",
  "a2a-node-fsync": "a2a-node (SQLite, fsync)",
  "a2a-node-postgres": "a2a-node (Postgres)",
  sdk: "@a2a-js/sdk (memory)",
  "sdk-sqlite": "@a2a-js/sdk (SQLite)",
  "sdk-sqlite-fsync": "@a2a-js/sdk (SQLite, fsync)",
  "sdk-postgres": "@a2a-js/sdk (Postgres)",
  bare: "bare echo",
};

/** The servers that keep their tasks in Postgres: the bench starts one server for them when any is selected. */
export const POSTGRES_SERVERS: ServerName[] = ["a2a-node-postgres", "sdk-postgres"];

/** Makes an empty database on the bench's Postgres server; returns its URL. */
export type CreateDatabase = (name: string) => Promise<string>;

/** The a2a-node servers (the compiled binary); the others run under Bun from scripts/bench. */
function isNode(name: ServerName): boolean {
  return name.startsWith("a2a-node");
}

export interface Pki {
  /** Home made by `init-pki`: the fleet CA and a2a-node's own identity. */
  a2aHome: string;
  /** Home of the a2a-node loaded over HTTP+JSON (one `serve` per home). */
  restHome: string;
  /** Bundles from `pki issue`, by purpose. */
  bundles: { sdk: string; bare: string; client: string; startup: string; rest: string };
}

export interface RunningServer {
  name: ServerName;
  url: string;
  /** The binding the load speaks to it. */
  binding: Binding;
  proc: Subprocess;
  /** performance.now() just before the spawn, for start-to-first-answer. */
  spawnedAt: number;
  logFile: string;
  /** a2a-node's SQLite WAL file, whose size the bench watches under load. */
  walFile?: string;
}

function run(args: string[]): void {
  const r = Bun.spawnSync([BINARY, ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0)
    throw new Error(`a2a-node ${args.join(" ")} failed: ${r.stderr.toString() || r.stdout.toString()}`);
}

export function makePki(dir: string): Pki {
  const a2aHome = join(dir, "a2a-home");
  run(["--home", a2aHome, "init-pki", "--name", "bench-a2a-node"]);
  const issue = (name: string) => {
    const out = join(dir, `${name}.bundle.json`);
    run(["--home", a2aHome, "pki", "issue", name, "--out", out]);
    return out;
  };
  const bundles = {
    sdk: issue("bench-sdk"),
    bare: issue("bench-bare"),
    client: issue("bench-load"),
    startup: issue("bench-startup"),
    rest: issue("bench-a2a-node-rest"),
  };
  const restHome = join(dir, "a2a-rest-home");
  run(["--home", restHome, "init-pki", "--bundle", bundles.rest]);
  return { a2aHome, restHome, bundles };
}

/** A fresh a2a-node home (no database yet) holding the `startup` identity, for start-to-first-answer runs. */
export function freshHome(dir: string, pki: Pki, n: number): string {
  const home = join(dir, `startup-home-${n}`);
  run(["--home", home, "init-pki", "--bundle", pki.bundles.startup]);
  return home;
}

export async function startServer(
  name: ServerName,
  pki: Pki,
  dir: string,
  home = nodeHome(name, pki, dir),
  createDatabase?: CreateDatabase,
): Promise<RunningServer> {
  const port = await freePort();
  const node = isNode(name);
  const database = POSTGRES_SERVERS.includes(name) ? await postgresUrl(name, createDatabase) : undefined;
  const cmd = node
    ? // The load comes from one peer far faster than the rate limit allows: the limit is set out of reach, so
      // its check is still paid on every request but never refuses one.
      [
        BINARY,
        "--home",
        home,
        "serve",
        "--executor",
        "echo",
        "--host",
        "127.0.0.1",
        "--port",
        String(port),
        "--max-concurrent",
        "64",
        "--quiet",
        "--rate-limit-per-second",
        "1000000",
        "--rate-limit-burst",
        "1000000",
        // A run stores a hundred thousand tasks and more from one caller: the quota is checked on every task (the
        // cost measured), but set past what a run stores.
        "--max-caller-tasks",
        "1000000000",
        ...(database ? ["--database", database] : []),
        ...(name === "a2a-node-fsync" ? ["--durability", "fsync"] : []),
      ]
    : name === "bare"
      ? [BUN, join(import.meta.dir, "bare-echo-server.ts"), String(port), pki.bundles.bare]
      : [
          BUN,
          join(import.meta.dir, "sdk-server.ts"),
          String(port),
          pki.bundles.sdk,
          database ?? (name === "sdk" ? "memory" : `sqlite:${join(dir, `${name}-${port}.db`)}`),
          name === "sdk-sqlite-fsync" ? "FULL" : "NORMAL",
        ];
  const logFile = join(dir, `${name}-${port}.log`);
  const spawnedAt = performance.now();
  // a2a-node logs on stdout, the other servers on stderr: both go to the log file (the node's log is quiet).
  const proc = track(
    Bun.spawn(cmd, {
      cwd: ROOT,
      stdin: "ignore",
      stdout: node ? Bun.file(logFile) : "ignore",
      stderr: node ? "inherit" : Bun.file(logFile),
    }),
  );
  // The WAL of the SQLite file that holds the tasks (with Postgres, the home's file holds only the peers).
  const walFile = node && !database ? `${homePaths(home).database}-wal` : undefined;
  const binding: Binding = name === "a2a-node-rest" ? "http-json" : "jsonrpc";
  return { name, url: `https://127.0.0.1:${port}/`, binding, proc, spawnedAt, logFile, walFile };
}

/**
 * Each a2a-node server runs in a home of its own (one `serve` per home); those past the first two are made on
 * first use, with the identity the HTTP+JSON one has (one identity may be installed in several homes).
 */
function nodeHome(name: ServerName, pki: Pki, dir: string): string {
  if (name === "a2a-node") return pki.a2aHome;
  if (name === "a2a-node-rest") return pki.restHome;
  const home = join(dir, `${name}-home`);
  if (isNode(name) && !existsSync(home)) run(["--home", home, "init-pki", "--bundle", pki.bundles.rest]);
  return home;
}

async function postgresUrl(name: ServerName, createDatabase: CreateDatabase | undefined): Promise<string> {
  if (!createDatabase) throw new Error(`${name} needs a Postgres server, and none was started`);
  return createDatabase(`bench_${name.replaceAll("-", "_")}`);
}

/**
 * Polls SendMessage until the server answers correctly; returns ms from the spawn to that first right answer.
 * Connection refusals while the server boots come back in well under a millisecond, so a 1 ms pause between
 * tries keeps the measured time honest without burning a core the server needs to start.
 */
export async function waitUntilAnswering(server: RunningServer, tls: ClientTls, timeoutMs = 20_000): Promise<number> {
  const since = server.spawnedAt;
  let lastError = "";
  for (let attempt = 0; performance.now() - since < timeoutMs; attempt++) {
    assertRunning(server, "before answering");
    const { url, headers, body, text } = sendMessageRequest(
      server.binding,
      server.url,
      `bench-ready-${server.proc.pid}-${attempt}`,
      attempt,
    );
    let status: number;
    let answer: string;
    try {
      const res = await fetch(url, { method: "POST", headers, body, tls } as RequestInit);
      [status, answer] = [res.status, await res.text()];
    } catch (err) {
      lastError = (err as Error).message; // not listening yet
      await Bun.sleep(1);
      continue;
    }
    const error = checkAnswer(status, answer, text, server.binding);
    if (error) throw new Error(`${server.name} answered wrongly: ${error}`); // listening but broken: no point waiting
    return performance.now() - since;
  }
  throw new Error(
    `${server.name} did not answer within ${timeoutMs} ms (last error: ${lastError}):\n${logTail(server)}`,
  );
}

/** Throws with the server's last log lines if it is gone (then /proc has nothing to measure either). */
export function assertRunning(server: RunningServer, when = "under load"): void {
  if (server.proc.exitCode !== null || server.proc.signalCode !== null)
    throw new Error(
      `${server.name} exited (${server.proc.exitCode ?? server.proc.signalCode}) ${when}:\n${logTail(server)}`,
    );
}

export function logTail(server: RunningServer): string {
  try {
    return readFileSync(server.logFile, "utf8").split("\n").slice(-15).join("\n");
  } catch {
    return "(no log)";
  }
}
