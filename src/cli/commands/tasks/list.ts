import { resolveTarget, type Target } from "../../../client/connect";
import type { Task, TaskState } from "../../../protocol/types";
import { TASK_STATES } from "../../../protocol/types";
import type { CommandContext, Subcommand } from "../../command";
import { tracedCommand, type CommandTrace } from "../../command-trace";
import {
  clientPolicy,
  loadClientIdentity,
  openClientSession,
  openPeers,
  sessionForTarget,
  type ClientIdentity,
  type ClientSession,
} from "../../client-session";
import type { Io } from "../../io";
import { CliError, ExitCode, UsageError } from "../../errors";
import { intFlag, parseFlags } from "../../flags";
import { PEER_TIMEOUT_FLAGS, PEER_TIMEOUT_HELP } from "../../peer-timeouts";
import { shortState, statusNote } from "../../render-task";

const flags = {
  agent: { type: "string", value: "NAME|URL" },
  state: { type: "string", value: "STATE" },
  limit: { type: "number", value: "N" },
  json: { type: "boolean" },
  ...PEER_TIMEOUT_FLAGS,
} as const;

const PAGE = 100;

export const list: Subcommand = {
  name: "list",
  usage: "tasks list [--agent NAME|URL] [--state STATE] [--limit N] [--json]",
  summary: `the tasks this node delegated (ListTasks on each peer), newest first. A peer shows each caller
            only its own tasks, so these are exactly the ones sent from this node's identity. Output: PEER,
            ID, STATE, UPDATED and the task's status message, one task a line. Without --agent, a peer that
            cannot be asked is named on stderr (or in "errors") and the others are still listed.`,
  flags,
  flagHelp: `  --agent NAME|URL   ask this peer only (default: every peer of 'a2a-node peers list')
  --state STATE      only tasks in this state: ${TASK_STATES.map(shortState).join(", ")}
  --limit N          at most N tasks, newest first (default 20, at most 1000)
  --json             {"tasks":[{"peer":NAME,"task":Task}...],"errors":[{"peer":NAME,"error":TEXT}...]} on one line
${PEER_TIMEOUT_HELP}`,
  examples: `  a2a-node tasks list
  a2a-node tasks list --agent beta --state input-required
  a2a-node tasks list --json | jq -r '.tasks[] | select(.task.status.state == "TASK_STATE_WORKING") | .task.id'`,
  run: (argv, ctx) => tracedCommand("tasks list", ctx, (trace) => listTasks(argv, ctx, trace)),
};

async function listTasks(argv: string[], { io, home }: CommandContext, trace: CommandTrace): Promise<number> {
  const { flags: f, positionals } = parseFlags(argv, flags);
  if (positionals.length)
    throw new UsageError(`tasks list takes no arguments (got '${positionals[0]}'; a peer goes in --agent)`);
  const limit = intFlag("limit", f.limit, 20, 1, 1000);
  const state = f.state === undefined ? undefined : parseState(f.state);

  const agent = f.agent;
  const sources = agent
    ? [{ peer: agent, open: () => openClientSession(home, agent, io, [], f, trace) }]
    : await everyPeer(home, io, f, trace);
  if (sources.length === 0) {
    io.stdout.write(
      f.json
        ? `${JSON.stringify({ tasks: [], errors: [] })}\n`
        : "no peers yet: add one with 'a2a-node peers add NAME URL'\n",
    );
    return ExitCode.Ok;
  }
  // Peers are asked at once; without --agent, one that fails is reported and the others still listed.
  const results = await Promise.all(
    sources.map(async ({ peer, open }) => {
      try {
        const session = await open();
        return {
          peer: session.target.peer?.name ?? session.target.baseUrl,
          tasks: await listAll(session, state, limit),
        };
      } catch (err) {
        if (agent || !(err instanceof CliError)) throw err;
        return { peer, tasks: [] as Task[], error: err };
      }
    }),
  );
  const rows = results
    .flatMap((r) => r.tasks.map((task) => ({ peer: r.peer, task })))
    .sort((a, b) => (b.task.status.timestamp ?? "").localeCompare(a.task.status.timestamp ?? ""))
    .slice(0, limit);
  const failures = results.flatMap((r) => ("error" in r && r.error ? [{ peer: r.peer, error: r.error }] : []));
  const errors = failures.map(({ peer, error }) => ({
    peer,
    error: error.message,
    ...(error.hint ? { hint: error.hint } : {}),
  }));

  if (f.json) io.stdout.write(`${JSON.stringify({ tasks: rows, errors })}\n`);
  else {
    for (const e of errors) io.stderr.write(`a2a-node: ${e.error}\n${e.hint ? `  next: ${e.hint}\n` : ""}`);
    io.stdout.write(rows.length ? table(rows) : `no tasks${state ? ` in state ${shortState(state)}` : ""}\n`);
  }
  return failures.length ? failures[0].error.exitCode : ExitCode.Ok;
}

/** A session opener for every registered peer, each held to its name and pin. */
async function everyPeer(
  home: string,
  io: Io,
  flags: Record<string, unknown>,
  trace: CommandTrace,
): Promise<{ peer: string; open(): Promise<ClientSession> }[]> {
  let identity: Promise<ClientIdentity> | undefined;
  // Loaded once, and only if a fleet peer needs it: outside peers are reached without this node's certificate.
  const ours = () => (identity ??= loadClientIdentity(home));
  const policy = { ...clientPolicy(home, io, flags), home, trace };
  const { peers, close } = openPeers(home);
  try {
    return peers.list().map((p) => {
      const target = resolveTarget(p.name, peers) as Target;
      return { peer: p.name, open: () => sessionForTarget(target, ours, policy) };
    });
  } finally {
    close();
  }
}

/** "working", "TASK_STATE_WORKING" or "input_required" → the state; anything else is a usage error. */
function parseState(text: string): TaskState {
  const wanted = text
    .trim()
    .toUpperCase()
    .replace(/-/g, "_")
    .replace(/^TASK_STATE_/, "");
  const state = TASK_STATES.find((s) => s === `TASK_STATE_${wanted}`);
  if (!state) throw new UsageError(`--state '${text}' is not a task state (${TASK_STATES.map(shortState).join(", ")})`);
  return state;
}

/** ListTasks, page after page, until `limit` tasks or the last page. */
async function listAll(session: ClientSession, status: TaskState | undefined, limit: number): Promise<Task[]> {
  if (session.client.protocol !== "1.0")
    throw new CliError(
      `${session.target.label} speaks A2A v0.3, which has no way to list tasks`,
      ExitCode.Failure,
      "ask for one task with 'a2a-node status --task-id ID'",
    );
  const tasks: Task[] = [];
  let pageToken: string | undefined;
  try {
    do {
      const page = await session.client.listTasks({
        status,
        pageSize: Math.min(PAGE, limit - tasks.length),
        pageToken,
        includeArtifacts: false,
        historyLength: 0,
      });
      tasks.push(...page.tasks);
      pageToken = page.nextPageToken || undefined;
    } while (pageToken && tasks.length < limit);
  } catch (err) {
    return session.fail(err);
  }
  return tasks.slice(0, limit);
}

function table(rows: { peer: string; task: Task }[]): string {
  const now = Date.now();
  const lines = rows.map(({ peer, task }) => [
    peer,
    task.id,
    shortState(task.status.state),
    ago(task.status.timestamp, now),
    statusNote(task) ?? "",
  ]);
  const head = ["PEER", "ID", "STATE", "UPDATED", "MESSAGE"];
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cols: string[]) =>
    cols
      .map((c, i) => (i === cols.length - 1 ? (c.length > 60 ? `${c.slice(0, 59)}…` : c) : c.padEnd(widths[i])))
      .join("  ")
      .trimEnd();
  return `${[fmt(head), ...lines.map(fmt)].join("\n")}\n`;
}

/** "12s ago", "5m ago", "3h ago", "4d ago" */
function ago(timestamp: string | undefined, now: number): string {
  if (!timestamp) return "-";
  const s = Math.max(0, Math.round((now - Date.parse(timestamp)) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}
