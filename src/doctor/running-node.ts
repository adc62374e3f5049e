/**
 * What doctor checks when the home's node runs: the node as it runs, not as its config file would start one.
 * A node started with flags (another port, another model URL, Postgres) is asked on the port it really
 * listens on (HOME/serve.json, runtime-state.ts), and its own readiness report says whether its database and
 * model endpoint work, with the settings and keys it holds.
 */
import type { RuntimeState } from "../runtime-state";
import type { NodeHealth } from "../service/node-health";
import { VERSION } from "../version";
import { type Finding, fail, ok, warn } from "./check";

/** Who runs, since when, and with what that the config file does not say. */
export function runningFinding(state: RuntimeState): Finding {
  const given = [
    ...(state.fromFlags.length ? [`flags: ${state.fromFlags.join(", ")}`] : []),
    ...(state.fromEnv.length ? [`environment: ${state.fromEnv.join(", ")}`] : []),
  ];
  const detail = `PID ${state.pid}, node "${state.name}" since ${state.startedAt}, executor ${state.executor}, tasks in ${state.database.kind === "postgres" ? `Postgres ${state.database.where}` : state.database.where}${given.length ? `; settings from ${given.join("; ")}` : ""}`;
  if (state.version !== VERSION)
    return warn(
      "node",
      `${detail}; it runs version ${state.version}, this binary is ${VERSION}`,
      "restart it to run this version (systemctl restart a2a-node, or stop serve and start it again)",
    );
  return ok("node", detail);
}

/** The port it listens on, and whether it answers there. */
export function runningPortFinding(state: RuntimeState, health: NodeHealth): Finding {
  const bound = new URL(state.urls.mtls).host;
  if (health.answered)
    return ok("port", `${bound} is held by this home's node (PID ${state.pid}), which answers at ${health.url}`);
  return fail(
    "port",
    `this home's node (PID ${state.pid}) listens on ${bound} but does not answer at ${health.url}: ${health.detail}`,
    "see its log (journalctl -u a2a-node -n 50), or restart it",
  );
}

/** One of the node's own readiness checks, as a finding; undefined when it did not answer. */
export function readinessFinding(
  check: "model" | "database",
  state: RuntimeState,
  health: NodeHealth,
): Finding | undefined {
  const c = health.checks?.[check];
  if (!health.answered || !c) return undefined;
  const what =
    check === "model"
      ? modelWhat(state)
      : state.database.kind === "postgres"
        ? `Postgres ${state.database.where}`
        : state.database.where;
  if (c.ok) return ok(check, `${what}: ${c.detail} (as the running node sees it)`);
  const fix =
    check === "model"
      ? state.executor === "hermes"
        ? "start Hermes's API server, or restart the node with hermes_url and HERMES_API_KEY set right; tasks fail until it answers"
        : `start the model server at ${state.modelUrl ?? "its model_url"} (e.g. 'ollama serve'), or restart the node with model_url pointing at one; tasks fail until it answers`
      : state.database.kind === "postgres"
        ? "see the detail: a standby or read-only server, no free connection, a full disk; the node's log says more (journalctl -u a2a-node)"
        : "see the detail; the node's log says more (journalctl -u a2a-node)";
  return fail(check, `${what}: ${c.detail} (as the running node sees it)`, fix);
}

function modelWhat(state: RuntimeState): string {
  if (state.executor === "openai") return `openai at ${state.modelUrl}`;
  if (state.executor === "hermes") return `hermes at ${state.hermesUrl}`;
  return state.executor;
}
