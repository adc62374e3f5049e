import { RemoteError } from "../../client/peer-client";
import type { Command, CommandContext } from "../command";
import { tracedCommand, type CommandTrace } from "../command-trace";
import { openClientSession } from "../client-session";
import { CliError, ExitCode, UsageError } from "../errors";
import { parseFlags } from "../flags";
import { sentTaskAgent } from "../sent-tasks";
import { PEER_TIMEOUT_FLAGS, PEER_TIMEOUT_HELP } from "../peer-timeouts";
import { shortState, statusLine } from "../render-task";

const flags = {
  agent: { type: "string", value: "NAME|URL" },
  "task-id": { type: "string", value: "ID" },
  json: { type: "boolean" },
  ...PEER_TIMEOUT_FLAGS,
} as const;

export const cancelCommand: Command = {
  name: "cancel",
  summary: "cancel a task this node delegated to a peer",
  help: `Cancel a task this node delegated to a peer (CancelTask). A running task is stopped and ends CANCELED; a
task waiting for input is canceled at once. A peer lets each caller cancel only its own tasks.

USAGE
  a2a-node cancel [--agent NAME|URL] --task-id ID [--json]

FLAGS
  --agent NAME|URL   the peer the task was sent to (default: the one this home sent it to, as send noted)
  --task-id ID       the id 'a2a-node send' printed (or 'a2a-node tasks list' shows)
  --json             print the canceled Task (A2A v1.0 JSON) on one line on stdout
${PEER_TIMEOUT_HELP}

EXAMPLES
  a2a-node cancel --agent beta --task-id 01JD3Q6W1V7Y2T3M4N5P6Q7R8S
  a2a-node tasks list --agent beta --state working --json | jq -r '.tasks[].task.id' |
    xargs -n1 a2a-node cancel --agent beta --task-id

EXIT CODES
  0 canceled   1 the task had already ended (nothing to cancel), or the peer answered an error
  2 usage error (also an outside peer's unreadable token file)   3 no such task (or not yours)   4 cannot connect
  5 the peer did not answer in time
  8 refused (TLS, certificate, name, pin, or its card unsigned or not signed by it; an outside peer's 401/403 to its token)
`,
  flags,
  run: (argv, ctx) => tracedCommand("cancel", ctx, (trace) => cancel(argv, ctx, trace)),
};

async function cancel(argv: string[], { io, home }: CommandContext, trace: CommandTrace): Promise<number> {
  const { flags: f, positionals } = parseFlags(argv, flags);
  if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  if (!f["task-id"]) throw new UsageError("--task-id is required");
  const agent = f.agent ?? sentTaskAgent(home, f["task-id"]);
  if (!agent)
    throw new UsageError(
      `--agent is required: task ${f["task-id"]} was not sent from this home (no record of its peer)`,
    );
  const session = await openClientSession(home, agent, io, [], f, trace);
  const peer = session.target.peer?.name ?? agent;
  let task;
  try {
    task = await session.client.cancelTask(f["task-id"]);
  } catch (err) {
    if (err instanceof RemoteError && err.code === -32002)
      throw new CliError(
        `${session.target.label}: ${err.message}`,
        ExitCode.Failure,
        `see how it ended with 'a2a-node status --agent ${peer} --task-id ${f["task-id"]}'`,
      );
    return session.fail(err);
  }
  io.stdout.write(f.json ? `${JSON.stringify(task)}\n` : `${statusLine(task, session.target.label)}\n`);
  // It may have ended on its own while the cancel was on its way.
  if (task.status.state !== "TASK_STATE_CANCELED")
    throw new CliError(
      `task ${task.id} ended ${shortState(task.status.state)} before the cancel reached it`,
      ExitCode.Failure,
    );
  return ExitCode.Ok;
}
