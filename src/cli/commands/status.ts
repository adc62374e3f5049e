import type { Command, CommandContext } from "../command";
import { tracedCommand, type CommandTrace } from "../command-trace";
import { openClientSession } from "../client-session";
import { UsageError } from "../errors";
import { parseFlags } from "../flags";
import { sentTaskAgent } from "../sent-tasks";
import { PEER_TIMEOUT_FLAGS, PEER_TIMEOUT_HELP } from "../peer-timeouts";
import { answerHint, artifactsText, statusLine } from "../render-task";
import { DEFAULT_WAIT_SECONDS, waitAndReport } from "../wait-report";

const flags = {
  agent: { type: "string", value: "NAME|URL" },
  "task-id": { type: "string", value: "ID" },
  "history-length": { type: "number", value: "N" },
  wait: { type: "boolean" },
  timeout: { type: "number", value: "SECONDS" },
  json: { type: "boolean" },
  ...PEER_TIMEOUT_FLAGS,
} as const;

export const statusCommand: Command = {
  name: "status",
  summary: "show a delegated task's state and result, or wait for it to end",
  help: `Show the state of a task this node delegated to a peer, and its result if it has one; with --wait,
wait until it ends or asks for input (following its events as they happen, or asking every second where the
peer cannot stream them). A peer shows each caller only its own tasks.

USAGE
  a2a-node status [--agent NAME|URL] --task-id ID [--wait [--timeout S]] [--json]

FLAGS
  --agent NAME|URL     the peer the task was sent to (default: the one this home sent it to, as send noted in
                       HOME/sent-tasks.jsonl; needed for a task sent from elsewhere)
  --task-id ID         the id 'a2a-node send' printed
  --wait               wait until the task completes, fails, is canceled, or asks for input (or for an
                       authorization: its status says what, and the line after it how to retry); on a terminal a
                       progress line on stderr shows its state, the time waited and its last status message
  --timeout S          with --wait: stop waiting after S seconds (default ${DEFAULT_WAIT_SECONDS}); the task keeps running
  --history-length N   with --json: include at most N messages of the task's history
  --json               print the Task (A2A v1.0 JSON) on one line on stdout
${PEER_TIMEOUT_HELP}

EXAMPLES
  a2a-node status --task-id 01JD3Q6W1V7Y2T3M4N5P6Q7R8S --wait     # a task this home sent
  a2a-node status --agent beta --task-id 01JD3Q6W1V7Y2T3M4N5P6Q7R8S
  a2a-node status --agent beta --task-id 01JD3Q6W1V7Y2T3M4N5P6Q7R8S --wait
  a2a-node status --agent beta --task-id 01JD3Q6W1V7Y2T3M4N5P6Q7R8S --json | jq .status.state

EXIT CODES
  without --wait: 0 the task was found (whatever its state)
  with --wait: 0 completed   1 failed or rejected   5 --timeout reached   6 waits for input or authorization   7 canceled
               130 Ctrl-C (the task goes on)
  1 the peer answered an error   2 usage error (also an outside peer's unreadable token file)   3 no such task (or not yours)
  4 cannot connect (nothing listens, not TLS, unknown host, no connection or handshake in time)
  5 the peer did not answer within --peer-answer-timeout   8 refused (TLS handshake, certificate, name or pin, an unsigned
  card; an outside peer's 401/403 to its token)
`,
  flags,
  run: (argv, ctx) => tracedCommand("status", ctx, (trace) => status(argv, ctx, trace)),
};

async function status(argv: string[], { io, home }: CommandContext, trace: CommandTrace): Promise<number> {
  const { flags: f, positionals } = parseFlags(argv, flags);
  if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  if (!f["task-id"]) throw new UsageError("--task-id is required");
  const agent = f.agent ?? sentTaskAgent(home, f["task-id"]);
  if (!agent)
    throw new UsageError(
      `--agent is required: task ${f["task-id"]} was not sent from this home (no record of its peer)`,
    );
  const hl = f["history-length"];
  if (hl !== undefined && (!Number.isInteger(hl) || hl < 0)) throw new UsageError("--history-length must be 0 or more");
  const timeoutS = f.timeout ?? DEFAULT_WAIT_SECONDS;
  if (!(timeoutS > 0)) throw new UsageError(`--timeout must be a positive number of seconds (got ${f.timeout})`);
  if (f.timeout !== undefined && !f.wait) throw new UsageError("--timeout goes with --wait");
  const session = await openClientSession(home, agent, io, [], f, trace);
  let task;
  try {
    task = await session.client.getTask({ id: f["task-id"], historyLength: hl });
  } catch (err) {
    return session.fail(err);
  }
  if (f.wait)
    return waitAndReport(
      { io, session, agent: session.target.peer?.name ?? agent, json: f.json, timeoutS, printResult: true },
      task,
    );
  if (f.json) io.stdout.write(`${JSON.stringify(task)}\n`);
  else {
    io.stdout.write(`${statusLine(task, session.target.label)}\n`);
    const hint = answerHint(task, session.target.peer?.name ?? agent);
    if (hint) io.stderr.write(`${hint}\n`);
    const out = artifactsText(task);
    if (out) io.stdout.write(out.endsWith("\n") ? out : `${out}\n`);
  }
  return 0;
}
