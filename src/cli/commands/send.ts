import { RemoteError } from "../../client/peer-client";
import { isTerminal, type Message, type Task } from "../../protocol/types";
import { isOutsidePeer } from "../../peers/peer-registry";
import { newId } from "../../clock";
import { readAttachments, readTaskText } from "../attachments";
import type { Command } from "../command";
import type { Io } from "../io";
import { openClientSession, type ClientSession } from "../client-session";
import { tracedCommand, type CommandTrace } from "../command-trace";
import { CliError, ExitCode, UsageError } from "../errors";
import { parseFlags } from "../flags";
import { PEER_TIMEOUT_FLAGS, PEER_TIMEOUT_HELP } from "../peer-timeouts";
import { answerHint, otherTaskNote, shortState } from "../render-task";
import { answeredStatus } from "../follow-task";
import { streamTask } from "../stream-task";
import { rememberSentTask } from "../sent-tasks";
import { DEFAULT_WAIT_SECONDS, followUp, jsonLine, waitAndReport, type WaitReport } from "../wait-report";

const flags = {
  agent: { type: "string", value: "NAME|URL" },
  task: { type: "string", value: "TEXT" },
  file: { type: "list", value: "PATH" },
  "task-id": { type: "string", value: "ID" },
  "context-id": { type: "string", value: "ID" },
  skill: { type: "string", value: "ID" },
  extension: { type: "list", value: "URI" },
  wait: { type: "boolean" },
  stream: { type: "boolean" },
  timeout: { type: "number", value: "SECONDS" },
  json: { type: "boolean" },
  verbose: { type: "boolean" },
  ...PEER_TIMEOUT_FLAGS,
} as const;

export const sendCommand: Command = {
  name: "send",
  summary: "delegate a task to a peer (and optionally wait for its result)",
  help: `Delegate a task to a peer over mutual TLS (or to a peer outside the fleet with its own token: see
'a2a-node peers --help'). The peer commits the task before it answers, so the task id stays valid whatever
happens to this connection: with --wait or --stream it is printed on stderr as soon as the peer accepts the
task, and 'a2a-node status --task-id ID --wait' picks the wait up again (this home remembers which peer each
task it sent went to, in HOME/sent-tasks.jsonl, so status and cancel need no --agent for them).

The binding is the first of the peer's card's interfaces (its preference order) that this client speaks:
JSON-RPC, HTTP+JSON or gRPC, at A2A v1.0 (JSON-RPC v0.3 to a peer that knows only that). gRPC goes to the
card's host:port port, on the host the peer was reached at, over HTTP/2 with the same certificate, pin and
timeouts; a peer outside the fleet is spoken to over JSON-RPC or HTTP+JSON only. status, tasks and cancel
choose the same way.

USAGE
  a2a-node send --agent NAME|URL --task TEXT [--file PATH]... [--wait|--stream [--timeout S]] [--json]
  a2a-node send --agent NAME|URL --task-id ID --task TEXT [--wait]      # answer a task that asked for input

FLAGS
  --agent NAME|URL   a peer from 'a2a-node peers list' (its fleet certificate must be for NAME, and hold the
                     pinned key if pinned), or an https URL (without a port: 9443, the node's default): a
                     registered peer's URL is held to that peer; any other accepts any fleet member and
                     says which. The peer's agent card must be signed by it (unsigned_cards: see README)
  --task TEXT        what to do, in plain text; '-' reads it from standard input
  --file PATH        attach a file (repeatable): sent as an A2A file part, its media type guessed from its
                     name (or its bytes). The peer's body limit (max_body, 1 MiB by default) counts the
                     files in base64, a third larger than on disk
  --task-id ID       continue this task (one waiting for input) instead of starting a new one; --wait then
                     waits for what the task does after this answer, not the question it answered. To a
                     peer outside the fleet the message also names the task's context (Hermes's own A2A
                     takes it as a new task of that conversation, and a note says so)
  --context-id ID    start the task in an existing conversation
  --skill ID         ask for one of the peer's skills (its card lists them); sent as message.metadata.skill
  --extension URI    request an A2A extension of the peer's card (repeatable): sent in the A2A-Extensions
                     header; one the peer marks required must be named, or it refuses the message (-32008).
                     Extensions the peer did not activate are named on stderr (not with --json)
  --wait             wait until the task completes, fails, is canceled, or asks for input (or for an
                     authorization: its status says what; once fixed there, any message to the task retries it)
  --stream           like --wait, but print the answer as it is produced (tokens as they come) and the
                     agent's progress on stderr; with --json, one JSON stream item per line
  --timeout S        with --wait/--stream: stop waiting after S seconds (default ${DEFAULT_WAIT_SECONDS}); the task keeps running
  --json             print the Task (A2A v1.0 JSON) on one line on stdout, nothing else; beside the Task's
                     fields, "traceId" holds the command's trace id (not on --stream's items: see --verbose)
  --verbose          print the command's trace id on stderr ("trace ID"), to find the task's spans in a
                     tracing backend (see 'a2a-node help tracing')
${PEER_TIMEOUT_HELP}

OUTPUT
  without --wait: "ID<TAB>STATE" on stdout, and on stderr the command that follows the task
  with --wait: "task ID accepted by ..." on stderr at once, the result (the artifacts' text) on stdout and
  a status line on stderr at the end. On a terminal, a progress line on stderr shows the state, the time
  waited and the agent's last status message meanwhile; piped or with --json, output stays plain.
  Ctrl-C stops waiting (the task goes on) and says how to follow it up.

EXAMPLES
  a2a-node send --agent beta --task "list the open ports on this host" --wait
  a2a-node send --agent beta --task "write a haiku about TLS" --stream
  a2a-node send --agent beta --task "summarise these notes" --file notes.md --file chart.png --wait
  a2a-node send --agent https://10.0.0.7:9443 --task "hello" --json
  a2a-node send --agent beta --task "cite your sources" --extension https://example.com/ext/citations/v1 --wait
  git diff | a2a-node send --agent beta --task - --wait --json | jq -r '.artifacts[0].parts[0].text'

EXIT CODES
  0 sent (with --wait/--stream: completed)   1 the task failed or was rejected, or the peer answered an error
  2 usage error (bad flags, a missing file, empty input, an outside peer's unreadable token file)   3 unknown peer or task
  4 cannot connect (nothing listens, not TLS, unknown host, no connection or handshake in time)
  5 --timeout reached (the task goes on), or the peer did not answer within --peer-answer-timeout
  6 the task waits for input (answer it with --task-id) or for an authorization   7 the task was canceled
  8 refused (TLS handshake, a certificate, the peer's name or pin, its card unsigned or not its own; an outside
    peer's 401/403 to its token)
  130 Ctrl-C while waiting (the task goes on)
`,
  flags,
  run: (argv, ctx) => tracedCommand("send", ctx, (trace) => send(argv, ctx.io, ctx.home, trace)),
};

async function send(argv: string[], io: Io, home: string, trace: CommandTrace): Promise<number> {
  const { flags: f, positionals } = parseFlags(argv, flags);
  if (positionals.length)
    throw new UsageError(`unexpected argument '${positionals[0]}' (quote the task text and pass it with --task)`);
  if (!f.agent) throw new UsageError("--agent is required (a peer name or an https URL)");
  if (f.task === undefined) throw new UsageError("--task is required (the text to delegate; '-' reads standard input)");
  if (f.wait && f.stream) throw new UsageError("--wait and --stream do not go together (--stream waits too)");
  const timeoutS = f.timeout ?? DEFAULT_WAIT_SECONDS;
  if (!(timeoutS > 0)) throw new UsageError(`--timeout must be a positive number of seconds (got ${f.timeout})`);
  const files = await readAttachments(f.file);
  const text = await readTaskText(f.task, io);

  const extensions = extensionList(f.extension);
  if (f.verbose)
    io.stderr.write(
      `trace ${trace.traceId}${trace.exporting ? "" : " (this home exports no spans: no otlp_endpoint set)"}\n`,
    );
  const session = await openClientSession(home, f.agent, io, extensions, f, trace);
  const message: Message = { messageId: newId(), role: "ROLE_USER", parts: [{ text }, ...files] };
  if (f["task-id"]) message.taskId = f["task-id"];
  if (f["context-id"]) message.contextId = f["context-id"];
  // A peer outside the fleet may keep a conversation by context alone (Hermes's own A2A server reads no
  // taskId): the answer goes with the task's context, so it lands in the same conversation there too.
  else if (message.taskId && session.target.peer && isOutsidePeer(session.target.peer))
    message.contextId = await contextOf(session, message.taskId);
  if (f.skill) message.metadata = { skill: f.skill };
  const agent = session.target.peer?.name ?? f.agent;
  const accepted = (id: string) => rememberSentTask(home, id, agent);
  const report: WaitReport = {
    io,
    session,
    agent,
    json: f.json,
    timeoutS,
    printResult: !f.stream,
    accepted,
    traceId: trace.traceId,
  };
  const tooLarge = (err: unknown) => (files.length ? explainTooLarge(err, session) : undefined);
  // A refusal the stream's start can get too, worded with the flag to change.
  if (f.stream) return streamTask(report, message, (err) => tooLarge(err) ?? explainRequired(err, session));

  // Receipt first: the peer commits the task and answers at once; then we wait, so a slow model or a cut
  // connection never costs the task.
  let task: Task;
  try {
    const result = await session.client.sendMessage({ message, configuration: { returnImmediately: true } });
    if (!("task" in result)) {
      io.stdout.write(
        f.json ? jsonLine(result, trace.traceId) : `${result.message.parts.map((p) => p.text ?? "").join("\n")}\n`,
      );
      return ExitCode.Ok;
    }
    task = result.task;
    accepted(task.id);
    if (!f.json) {
      noteInactive(io, session, extensions);
      const other = otherTaskNote(message.taskId, task, session.target.label);
      if (other) io.stderr.write(`${other}\n`);
    }
  } catch (err) {
    const large = tooLarge(err);
    if (large) throw large;
    const required = explainRequired(err, session);
    if (required) throw required;
    return session.fail(err);
  }
  if (!f.wait) {
    io.stdout.write(f.json ? jsonLine(task, trace.traceId) : `${task.id}\t${shortState(task.status.state)}\n`);
    // stdout stays the id and state alone, for scripts; the person is told how to follow the task.
    if (!f.json && !isTerminal(task.status.state))
      io.stderr.write(`${answerHint(task, agent) ?? `follow it with: ${followUp(agent, task.id)}`}\n`);
    return ExitCode.Ok;
  }
  if (!f.json) io.stderr.write(`task ${task.id} accepted by ${session.target.label}\n`);
  // An answer: the question it answered is not where the wait ends, even if the peer's reply still shows it.
  return waitAndReport(report, task, message.taskId === task.id ? answeredStatus(task) : undefined);
}

/** The context of the task an answer is for, as the peer has it (a task it does not know ends the command: exit 3). */
async function contextOf(session: ClientSession, taskId: string): Promise<string> {
  try {
    return (await session.client.getTask({ id: taskId })).contextId;
  } catch (err) {
    return session.fail(err);
  }
}

/** --extension values: URIs, each once (the header lists them comma-separated, so none may hold a comma). */
function extensionList(given: string[] | undefined): string[] {
  const out = [...new Set(given ?? [])];
  for (const uri of out)
    if (!/^[A-Za-z][A-Za-z0-9+.-]*:[^\s,]+$/.test(uri))
      throw new UsageError(
        `--extension '${uri}' is not an extension URI (an absolute URI without spaces or commas, as the peer's card lists it)`,
      );
  return out;
}

/** Says which requested extensions the peer did not activate (its card does not declare them, or it ignores them). */
function noteInactive(
  io: { stderr: { write(s: string): unknown } },
  session: ClientSession,
  requested: string[],
): void {
  if (!requested.length) return;
  const active = new Set(session.activatedExtensions?.() ?? []);
  const inactive = requested.filter((u) => !active.has(u));
  if (inactive.length)
    io.stderr.write(
      `${session.target.label} did not activate extension${inactive.length > 1 ? "s" : ""} ${inactive.join(", ")} (its card lists the ones it supports under capabilities.extensions)\n`,
    );
}

/** A peer that requires extensions the message did not request (-32008): which, and the flag that requests them. */
function explainRequired(err: unknown, session: ClientSession): CliError | undefined {
  if (!(err instanceof RemoteError) || err.code !== -32008) return undefined;
  const info = Array.isArray(err.data)
    ? (err.data as { metadata?: { extensions?: unknown } }[]).find((d) => typeof d?.metadata?.extensions === "string")
    : undefined;
  const uris = typeof info?.metadata?.extensions === "string" ? info.metadata.extensions.split(",") : [];
  return new CliError(
    `${session.target.label} refused the message: ${err.message}`,
    ExitCode.Failure,
    uris.length
      ? `if this client follows ${uris.length > 1 ? "those extensions" : "that extension"}, send again with ${uris.map((u) => `--extension ${u}`).join(" ")}`
      : "request the extensions its card marks required with --extension URI",
  );
}

/** A message over the peer's body limit (HTTP 413): the sizes, and what to do about them. */
function explainTooLarge(err: unknown, session: ClientSession): CliError | undefined {
  if (!(err instanceof RemoteError) || err.code !== -32600 || !/exceeds this node's limit/.test(err.message))
    return undefined;
  return new CliError(
    `${session.target.label} refused the message with its files: ${err.message}`,
    ExitCode.Failure,
    "send smaller or fewer files (base64 makes them a third larger), or raise max_body on the peer ('a2a-node serve --max-body BYTES')",
  );
}
