import type { Message, Task } from "../../protocol/types";
import { isSettled } from "../../protocol/types";
import { newId } from "../../tasks/clock";
import type { Command } from "../command";
import { openClientSession } from "../client-session";
import { CliError, ExitCode, UsageError } from "../errors";
import { parseFlags } from "../flags";
import { accumulate } from "../../tasks/artifacts";
import { answerHint, artifactsText, exitCodeFor, shortState, statusLine } from "../render-task";

const flags = {
  agent: { type: "string", value: "NAME|URL" },
  task: { type: "string", value: "TEXT" },
  "task-id": { type: "string", value: "ID" },
  "context-id": { type: "string", value: "ID" },
  skill: { type: "string", value: "ID" },
  wait: { type: "boolean" },
  stream: { type: "boolean" },
  timeout: { type: "number", value: "SECONDS" },
  json: { type: "boolean" },
} as const;

export const DEFAULT_WAIT_SECONDS = 600;

export const sendCommand: Command = {
  name: "send",
  summary: "delegate a task to a peer (and optionally wait for its result)",
  help: `Delegate a task to a peer over mutual TLS. The peer commits the task before it answers, so the task id
printed here stays valid whatever happens to this connection; check on it later with 'a2a-node status'.

USAGE
  a2a-node send --agent NAME|URL --task TEXT [--wait [--timeout S]] [--json]
  a2a-node send --agent NAME|URL --task-id ID --task TEXT [--wait]      # answer a task that asked for input

FLAGS
  --agent NAME|URL   a peer from 'a2a-node peers list' (its certificate must be for NAME), or an https URL
  --task TEXT        what to do, in plain text ('-' reads it from standard input)
  --task-id ID       continue this task (one waiting for input) instead of starting a new one
  --context-id ID    start the task in an existing conversation
  --skill ID         ask for one of the peer's skills (its card lists them); sent as message.metadata.skill
  --wait             wait until the task completes, fails, or asks for input
  --stream           like --wait, but print the answer as it is produced (tokens as they come) and the
                     agent's progress on stderr; with --json, one JSON stream item per line
  --timeout S        with --wait: stop waiting after S seconds (default ${DEFAULT_WAIT_SECONDS}); the task keeps running
  --json             print the Task (A2A v1.0 JSON) on one line on stdout, nothing else

OUTPUT
  without --wait: "ID<TAB>STATE" on stdout
  with --wait: the result (the artifacts' text) on stdout and a status line on stderr

EXAMPLES
  a2a-node send --agent beta --task "list the open ports on this host" --wait
  a2a-node send --agent beta --task "write a haiku about TLS" --stream
  a2a-node send --agent https://10.0.0.7:9443 --task "hello" --json
  echo "long prompt" | a2a-node send --agent beta --task - --wait --json | jq -r '.artifacts[0].parts[0].text'

EXIT CODES
  0 sent (with --wait: completed)   1 the task failed, was rejected or canceled, or the peer answered an error
  2 usage error   3 unknown peer or task   4 peer unreachable or refused our certificate
  5 --timeout reached (the task goes on)   6 the task waits for input (answer it with --task-id)
`,
  flags,
  async run(argv, { io, home }) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}' (quote the task text and pass it with --task)`);
    if (!f.agent) throw new UsageError("--agent is required (a peer name or an https URL)");
    if (f.task === undefined) throw new UsageError("--task is required (the text to delegate)");
    const text = f.task === "-" ? await Bun.stdin.text() : f.task;
    if (text.trim() === "") throw new UsageError("--task is empty");
    const timeoutS = f.timeout ?? DEFAULT_WAIT_SECONDS;
    if (!(timeoutS > 0)) throw new UsageError(`--timeout must be a positive number of seconds (got ${f.timeout})`);

    const session = await openClientSession(home, f.agent);
    const message: Message = { messageId: newId(), role: "ROLE_USER", parts: [{ text }] };
    if (f["task-id"]) message.taskId = f["task-id"];
    if (f["context-id"]) message.contextId = f["context-id"];
    if (f.skill) message.metadata = { skill: f.skill };
    if (f.stream) return streamTask(session, message, timeoutS, f.json, f.agent, io);

    // Receipt first: the peer commits the task and answers at once; then we wait by asking, so a slow model
    // or a cut connection never costs the task.
    let task: Task;
    try {
      const result = await session.client.sendMessage({ message, configuration: { returnImmediately: true } });
      if (!("task" in result)) {
        io.stdout.write(f.json ? `${JSON.stringify(result)}\n` : `${result.message.parts.map((p) => p.text ?? "").join("\n")}\n`);
        return ExitCode.Ok;
      }
      task = result.task;
    } catch (err) {
      return session.fail(err);
    }
    if (f.wait) task = await waitForTask(session, task, timeoutS * 1000, io.stopSignal);

    if (f.json) io.stdout.write(`${JSON.stringify(task)}\n`);
    else if (!f.wait) io.stdout.write(`${task.id}\t${shortState(task.status.state)}\n`);
    else {
      const out = artifactsText(task);
      if (out) io.stdout.write(out.endsWith("\n") ? out : `${out}\n`);
      io.stderr.write(`${statusLine(task, session.target.label)}\n`);
      const hint = answerHint(task, f.agent);
      if (hint) io.stderr.write(`${hint}\n`);
    }
    if (f.wait && !isSettled(task.status.state))
      throw new CliError(
        `gave up waiting after ${timeoutS}s; task ${task.id} is still ${shortState(task.status.state)}`,
        ExitCode.Timeout,
        `check later with 'a2a-node status --agent ${f.agent} --task-id ${task.id}'`,
      );
    return f.wait ? exitCodeFor(task) : ExitCode.Ok;
  },
};

/**
 * Polls GetTask until the task settles or the deadline passes, starting fast (most delegated tasks to a
 * local model take seconds) and backing off to once a second.
 */
async function waitForTask(
  session: Awaited<ReturnType<typeof openClientSession>>,
  task: Task,
  timeoutMs: number,
  stop?: AbortSignal,
): Promise<Task> {
  const deadline = Date.now() + timeoutMs;
  let delay = 20;
  let current = task;
  while (!isSettled(current.status.state) && Date.now() < deadline && !stop?.aborted) {
    await Bun.sleep(Math.min(delay, Math.max(0, deadline - Date.now())));
    delay = Math.min(delay * 2, 1000);
    try {
      current = await session.client.getTask({ id: task.id });
    } catch (err) {
      return session.fail(err);
    }
  }
  return current;
}

/**
 * --stream: SendStreamingMessage, printing artifact text as it arrives (stdout) and progress (stderr). The
 * task id is known from the first item, so a cut stream or --timeout still leaves the next step.
 */
async function streamTask(
  session: Awaited<ReturnType<typeof openClientSession>>,
  message: Message,
  timeoutS: number,
  json: boolean,
  agent: string,
  io: import("../io").Io,
): Promise<number> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error("timeout")), timeoutS * 1000);
  let task: Task | undefined;
  let printedNewline = true;
  /** Each artifact's text as printed so far. */
  const shown = new Map<string, string>();
  try {
    for await (const item of session.client.sendStreamingMessage({ message }, abort.signal)) {
      if (json) io.stdout.write(`${JSON.stringify(item)}\n`);
      if ("task" in item) task = item.task;
      else if ("message" in item) {
        if (!json) io.stdout.write(`${item.message.parts.map((p) => p.text ?? "").join("")}\n`);
        return ExitCode.Ok;
      } else if ("artifactUpdate" in item) {
        const { artifact, append } = item.artifactUpdate;
        const t = artifact.parts.map((p) => p.text ?? "").join("");
        const before = shown.get(artifact.artifactId);
        // A replacement of text already shown (an agent's final answer after streamed narration) prints only
        // what the reader has not seen yet.
        const fresh = append || before === undefined ? t : before.endsWith(t) ? "" : t.startsWith(before) ? t.slice(before.length) : `\n${t}`;
        shown.set(artifact.artifactId, append ? (before ?? "") + t : t);
        if (!json && fresh) {
          io.stdout.write(fresh);
          printedNewline = fresh.endsWith("\n");
        }
        if (task) task.artifacts = accumulate(task.artifacts ?? [], artifact, append === true);
      } else if ("statusUpdate" in item) {
        if (task) task.status = item.statusUpdate.status;
        const note = item.statusUpdate.status.message?.parts.map((p) => p.text ?? "").join("");
        if (!json && note && !isSettled(item.statusUpdate.status.state)) io.stderr.write(`[${agent}] ${note}\n`);
      }
    }
  } catch (err) {
    if (abort.signal.aborted && task)
      throw new CliError(`gave up waiting after ${timeoutS}s; task ${task.id} goes on`, ExitCode.Timeout, `check later with 'a2a-node status --agent ${agent} --task-id ${task.id}'`);
    if (task && !(err as { code?: number }).code)
      throw new CliError(`the stream broke off: ${(err as Error).message}; task ${task.id} goes on`, ExitCode.Failure, `check it with 'a2a-node status --agent ${agent} --task-id ${task.id}'`);
    return session.fail(err);
  } finally {
    clearTimeout(timer);
  }
  if (!task) throw new CliError("the peer's stream ended without a task", ExitCode.Failure);
  if (!json) {
    if (!printedNewline) io.stdout.write("\n");
    io.stderr.write(`${statusLine(task, session.target.label)}\n`);
    const hint = answerHint(task, agent);
    if (hint) io.stderr.write(`${hint}\n`);
  }
  return exitCodeFor(task);
}
