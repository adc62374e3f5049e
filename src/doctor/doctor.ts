/**
 * `a2a-node doctor`: every check in the order a person would fix things, each finding saying what to do.
 * Later checks that need an earlier one's result (peers need a usable identity) are skipped with the reason
 * rather than failing twice for one cause.
 */
import { accessSync, constants, existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { DEFAULTS, loadConfigFile, resolveSettings, type ServeConfig } from "../config";
import { homePaths, SYSTEM_HOME, type HomePaths } from "../home";
import { runningNodeState, type RuntimeState } from "../runtime-state";
import { nodeHealth, readEnvironmentFile } from "../service/node-health";
import { SYSTEM_ENV_FILE } from "../service/unit";
import { type Finding, fail, skip } from "./check";
import { checkCertificate, checkDatabase, checkHome, checkRevocation } from "./local-checks";
import { checkModel, checkPeers, checkPort } from "./network-checks";
import { readinessFinding, runningFinding, runningPortFinding } from "./running-node";

export interface DoctorOptions {
  home: string;
  env: Record<string, string | undefined>;
  /** serve --config FILE, if the node runs with one. */
  configFile?: string;
  timeoutMs: number;
}

export async function runDoctor(o: DoctorOptions): Promise<Finding[]> {
  const paths = homePaths(o.home);
  const asOwner = `run doctor as its owner: sudo a2a-node doctor${o.home === SYSTEM_HOME ? "" : ` --home ${o.home}`}`;
  let owner: number;
  try {
    owner = statSync(paths.root).uid;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT")
      return [
        fail(
          "home",
          `no a2a-node home at ${o.home}`,
          "a2a-node init-pki --name NAME (a new fleet) or --bundle FILE; or pass --home DIR",
        ),
      ];
    return [fail("home", `cannot reach ${o.home} (${code})`, asOwner)];
  }
  try {
    accessSync(paths.root, constants.R_OK | constants.X_OK);
  } catch {
    return [fail("home", `cannot look inside ${o.home} (owned by uid ${owner})`, asOwner)];
  }
  // The system service sees its environment file, not the environment of whoever runs doctor.
  const env = o.home === SYSTEM_HOME ? readEnvironmentFile(SYSTEM_ENV_FILE) : o.env;
  const findings: Finding[] = [...checkHome(paths), ...checkCertificate(paths)];

  let config: ServeConfig | undefined;
  try {
    const file = o.configFile ?? join(o.home, "config.toml");
    config = resolveSettings({}, env, loadConfigFile(file, o.configFile !== undefined)).config;
  } catch (err) {
    findings.push(
      fail(
        "configuration",
        (err as Error).message,
        "fix it; 'a2a-node serve --check' shows the effective configuration",
      ),
    );
  }
  const running = runningNodeState(o.home);
  if (running) findings.push(...(await runningFindings(paths, running, config, o.timeoutMs)));
  else {
    const [port, model] = config
      ? await Promise.all([checkPort(o.home, config, o.timeoutMs), checkModel(config, o.timeoutMs)])
      : [skip("port", "needs a valid configuration"), skip("model", "needs a valid configuration")];
    findings.push(port, model);
    if (config?.databaseUrl) {
      const { checkPostgres } = await import("./postgres-check");
      findings.push(await checkPostgres(config.databaseUrl, o.timeoutMs));
    }
  }
  findings.push(checkRevocation(paths, existsSync(paths.caKey) || config?.caPeer !== undefined));

  // The home's SQLite file: the tasks (unless they are in Postgres), and always the peer list.
  const postgres = running ? running.database.kind === "postgres" : config?.databaseUrl !== undefined;
  const database = checkDatabase(paths);
  findings.push(postgres ? { ...database, check: "home database" } : database);
  findings.push(...(await peerFindings(paths, database, o.timeoutMs)));
  return findings;
}

/**
 * The node as it runs: asked over mutual TLS where it listens, its readiness report gives the model
 * endpoint's and the database's state as it sees them (its settings, its keys, its Postgres connection).
 * What it cannot be asked is checked here with the settings it runs with.
 */
async function runningFindings(
  paths: HomePaths,
  state: RuntimeState,
  config: ServeConfig | undefined,
  timeoutMs: number,
): Promise<Finding[]> {
  const health = await nodeHealth(paths.root, config ?? DEFAULTS, timeoutMs);
  const out = [runningFinding(state), runningPortFinding(state, health)];
  const model =
    readinessFinding("model", state, health) ??
    (config
      ? await checkModel(
          {
            ...config,
            executor: state.executor as ServeConfig["executor"],
            modelUrl: state.modelUrl ?? config.modelUrl,
            hermesUrl: state.hermesUrl ?? config.hermesUrl,
          },
          timeoutMs,
        )
      : skip("model", "needs a valid configuration"));
  out.push(model);
  if (state.database.kind === "postgres")
    out.push(
      readinessFinding("database", state, health) ??
        skip(
          "database",
          `Postgres ${state.database.where}: the node did not answer to say (its password is not kept where doctor could read it)`,
        ),
    );
  return out;
}

async function peerFindings(
  paths: ReturnType<typeof homePaths>,
  database: Finding,
  timeoutMs: number,
): Promise<Finding[]> {
  if (database.status === "skip") return [skip("peers", "no database yet, so no peers registered")];
  if (database.status !== "ok") return [skip("peers", "the peer list is in the database, which is not usable")];
  const { loadNodeIdentity } = await import("../../pki/identity");
  let identity;
  try {
    identity = await loadNodeIdentity(paths);
  } catch (err) {
    return [skip("peers", `cannot dial peers without a usable identity (${(err as Error).message})`)];
  }
  const { openDatabase } = await import("../store/database");
  const { SqlitePeerRegistry } = await import("../store/sqlite-peer-registry");
  const db = openDatabase(paths.database);
  let peers;
  try {
    peers = new SqlitePeerRegistry(db.db).list();
  } finally {
    db.close();
  }
  return checkPeers(peers, identity, timeoutMs);
}
