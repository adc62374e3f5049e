/**
 * Several replicas of one agent on one Postgres database behind a TCP balancer, all on this machine: what
 * `npm run replicas` starts to try it, and what `npm run bench:replicas` measures. One fleet CA; the agent's
 * identity (valid for the balancer's address) is installed in every replica's home, since a client checks the
 * certificate of whichever replica the balancer picks against the one address it dialled.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { startBalancer, type Balancer } from "./tcp-balancer";
import { startPostgres, type PostgresServer } from "./postgres-server";

const ROOT = join(import.meta.dir, "..");
export const BINARY = join(ROOT, "dist", "a2a-node");

export interface ReplicaSetup {
  /** The balancer's URL: what a client dials. */
  url: string;
  /** Home of the fleet CA, which also holds a client identity named `client` (a bundle at clientBundle). */
  caHome: string;
  clientHome: string;
  clientBundle: string;
  databaseUrl: string;
  replicas: { home: string; port: number; proc: Subprocess }[];
  postgres: PostgresServer;
  balancer: Balancer;
  stop(): Promise<void>;
}

export interface ReplicaSetupOptions {
  dir: string;
  replicas: number;
  /** The balancer's port (0: any free one). */
  port?: number;
  /** Extra serve flags for every replica (executor, limits). */
  serveArgs?: string[];
  /** An existing server; otherwise one is started (durable, as in production). */
  postgres?: PostgresServer;
  /** Database name to create for this setup. */
  database?: string;
  /** Where each replica's stderr goes (default: a log file in dir). */
  quiet?: boolean;
}

function cli(args: string[]): string {
  const r = Bun.spawnSync([BINARY, ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0)
    throw new Error(`a2a-node ${args.join(" ")} failed: ${r.stderr.toString() || r.stdout.toString()}`);
  return r.stdout.toString();
}

async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

export async function startReplicaSetup(o: ReplicaSetupOptions): Promise<ReplicaSetup> {
  mkdirSync(o.dir, { recursive: true });
  const postgres = o.postgres ?? (await startPostgres({ durable: true }));
  const dbName = o.database ?? "a2a";
  const admin = new Bun.SQL(postgres.adminUrl, { max: 1 });
  try {
    await admin.unsafe(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
    await admin.unsafe(`CREATE DATABASE "${dbName}"`);
  } finally {
    await admin.close();
  }
  const dbUrl = new URL(postgres.adminUrl);
  dbUrl.pathname = `/${dbName}`;

  const caHome = join(o.dir, "ca");
  cli(["--home", caHome, "init-pki", "--name", "fleet-ca"]);
  const agentBundle = join(o.dir, "agent.bundle");
  cli(["--home", caHome, "pki", "issue", "agent", "--out", agentBundle]);
  const clientBundle = join(o.dir, "client.bundle");
  cli(["--home", caHome, "pki", "issue", "client", "--out", clientBundle]);
  const clientHome = join(o.dir, "client");
  cli(["--home", clientHome, "init-pki", "--bundle", clientBundle]);

  const replicas: ReplicaSetup["replicas"] = [];
  for (let i = 1; i <= o.replicas; i++) {
    const home = join(o.dir, `replica-${i}`);
    cli(["--home", home, "init-pki", "--bundle", agentBundle]);
    const port = await freePort();
    const proc = Bun.spawn(
      [
        BINARY,
        "--home",
        home,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        String(port),
        "--database",
        dbUrl.href,
        ...(o.serveArgs ?? []),
      ],
      {
        stdin: "ignore",
        stdout: "ignore",
        stderr: o.quiet === false ? "inherit" : Bun.file(join(o.dir, `replica-${i}.log`)),
      },
    );
    replicas.push({ home, port, proc });
  }
  await Promise.all(replicas.map((r) => untilListening(r.port, r.proc)));
  const balancer = startBalancer(
    o.port ?? 0,
    replicas.map((r) => ({ host: "127.0.0.1", port: r.port })),
  );
  return {
    url: `https://127.0.0.1:${balancer.port}/`,
    caHome,
    clientHome,
    clientBundle,
    databaseUrl: dbUrl.href,
    replicas,
    postgres,
    balancer,
    async stop() {
      balancer.stop();
      for (const r of replicas) r.proc.kill("SIGTERM");
      await Promise.all(replicas.map((r) => r.proc.exited));
      if (!o.postgres) await postgres.stop();
    },
  };
}

/** Resolves once something accepts TCP connections on the port (the replica is up), or throws if it exited. */
async function untilListening(port: number, proc: Subprocess, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`a replica exited (${proc.exitCode}) before listening on ${port}`);
    try {
      const s = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
      s.end();
      return;
    } catch {
      if (Date.now() > end) throw new Error(`no replica listening on ${port} after ${timeoutMs} ms`);
      await Bun.sleep(20);
    }
  }
}
