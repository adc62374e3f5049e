/**
 * A mixed fleet, one way: the compiled a2a-node calls a Hermes A2A node (the twin of Hermes's own A2A
 * plugin, test/fakes/hermes-a2a) as a peer outside the fleet, registered with
 * `peers add NAME URL --auth bearer --token-file F` under a per-peer token (A2A_PEER_TOKENS). send (--wait,
 * --stream), the answer to a question, status, tasks, cancel and ping, against what that server really
 * does: it answers SendMessage at once, streams its agent's raw reply, reads no taskId, ends some streams
 * without a task first, and refuses with its own error shapes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runBinary } from "../helpers/binary";
import { startHermesA2AServer, type HermesA2AServer } from "../fakes/hermes-a2a";
import { tempDir } from "../helpers/temp-dir";

const TOKEN = `hermes-peer-${crypto.randomUUID()}`;
let dir: string;
let home: string;
let tokenFile: string;
let hermes: HermesA2AServer;
/** Everything the CLI printed, searched for the token at the end. */
const printed: string[] = [];

async function cli(...args: string[]) {
  const r = await runBinary(["--home", home, ...args], { HOME: dir });
  printed.push(r.stdout, r.stderr);
  return r;
}

/** The task id of "task ID <state> (peer 'NAME')" or "task ID accepted by ...". */
const idIn = (text: string, state: string) => new RegExp(`^task (\\S+) ${state}`, "m").exec(text)?.[1];

beforeAll(async () => {
  dir = tempDir("a2a-hermes-a2a-");
  home = join(dir, "alpha");
  tokenFile = join(dir, "hermes.token");
  writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
  const init = await cli("init-pki", "--name", "alpha");
  expect(init.code, init.stderr).toBe(0);
  // A2A_PEER_TOKENS="alpha:TOKEN", and a rate limit this file's calls stay under.
  hermes = await startHermesA2AServer({
    port: 0,
    peerTokens: { alpha: TOKEN },
    rateLimit: 1000,
    agentName: "hermes-beta",
  });
  const added = await cli("peers", "add", "hermes", hermes.url, "--auth", "bearer", "--token-file", tokenFile);
  expect(added.code, added.stderr).toBe(0);
  expect(added.stdout).toContain("added peer hermes at");
});

afterAll(async () => {
  await hermes?.stop();
});

describe("a2a-node calls a Hermes A2A node as a peer outside the fleet", () => {
  it("peers ping reads its mixed v0.3/v1.0 card with the token and names the agent", async () => {
    const seen = hermes.requests.length;
    const r = await cli("peers", "ping", "hermes");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /peer 'hermes' \(http:\/\/127\.0\.0\.1:\d+\) answered in .*'hermes-beta' runs version 1\.0\.0, A2A 1\.0/,
    );
    const card = hermes.requests.slice(seen).find((q) => q.path === "/.well-known/agent-card.json");
    expect(card?.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it("send --wait: the task is taken at once (WORKING), followed to its end, and the answer printed", async () => {
    const seen = hermes.requests.length;
    const r = await cli("send", "--agent", "hermes", "--task", "summarise the incident", "--wait");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("Hermes heard: summarise the incident\n");
    const id = idIn(r.stderr, "accepted by peer 'hermes'");
    expect(id).toMatch(/^task-[0-9a-f]{16}$/);
    expect(r.stderr).toContain(`task ${id} completed (peer 'hermes')`);
    const posts = hermes.requests.slice(seen).filter((q) => q.method === "POST");
    expect(posts[0]).toMatchObject({
      rpcMethod: "SendMessage",
      status: 200,
      headers: { "a2a-version": "1.0", authorization: `Bearer ${TOKEN}` },
    });
    // The turn reached the agent as from the peer the token names, framed as another agent's input.
    const turn = hermes.turns.find((t) => t.taskId === id);
    expect(turn?.peer).toBe("alpha");
    expect(turn?.framed).toMatch(/^\[A2A inbound — message from a remote agent peer named 'alpha'\./);
  });

  it("send --stream prints the streamed answer", async () => {
    const r = await cli("send", "--agent", "hermes", "--task", "write a haiku", "--stream");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("Hermes heard: write a haiku\n");
    expect(r.stderr).toMatch(/task task-\S+ completed \(peer 'hermes'\)/);
    expect(
      hermes.requests.at(-1)?.rpcMethod === "SendStreamingMessage" ||
        hermes.requests.some((q) => q.rpcMethod === "SendStreamingMessage"),
    ).toBe(true);
  });

  it("send --stream of a task Hermes rejects at once: its stream holds only the status, and the rejection is reported", async () => {
    // Hermes's anti-loop cap: past A2A_MAX_PINGPONG_TURNS messages in one context, it rejects.
    const strict = await startHermesA2AServer({ port: 0, peerTokens: { alpha: TOKEN }, maxPingpongTurns: 1 });
    try {
      expect(
        (await cli("peers", "add", "strict", strict.url, "--auth", "bearer", "--token-file", tokenFile)).code,
      ).toBe(0);
      expect((await cli("send", "--agent", "strict", "--context-id", "ctx-loop", "--task", "first")).code).toBe(0);
      const r = await cli("send", "--agent", "strict", "--context-id", "ctx-loop", "--task", "second", "--stream");
      expect(r.stderr).not.toContain("ended without a task");
      expect(r.code, r.stderr).toBe(1);
      const id = idIn(r.stderr, "accepted by peer 'strict'");
      expect(r.stderr).toContain(
        `task ${id} rejected (peer 'strict'): Anti-loop protection: context ctx-loop exceeded 1 turns.`,
      );
      expect(strict.stateOf(id!)).toBe("TASK_STATE_REJECTED");
    } finally {
      await strict.stop();
    }
  });

  it("send --stream of a question: Hermes streams it as COMPLETED with its marker, a2a-node reports what Hermes records (input-required)", async () => {
    const r = await cli("send", "--agent", "hermes", "--task", "[ask] deploy 1.4.2", "--stream");
    const id = idIn(r.stderr, "accepted by peer 'hermes'");
    expect(hermes.stateOf(id!)).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(r.code, r.stderr).toBe(6);
    expect(r.stderr).toContain(`task ${id} input-required (peer 'hermes'): Which environment: staging or production?`);
    expect(r.stderr).toContain(`answer it with: a2a-node send --agent hermes --task-id ${id}`);
  });

  it("send --wait sees a question Hermes asked before the wait began (its subscription only sends a task's end)", async () => {
    // Hermes's agent answers at once, before a2a-node subscribes; Hermes's SubscribeToTask then stays silent
    // until its reply timeout (300 s). --timeout 10 would end the wait (exit 5) if a2a-node relied on it.
    const asked = await cli("send", "--agent", "hermes", "--task", "[ask] deploy 1.4.3", "--wait", "--timeout", "10");
    expect(asked.code, asked.stderr).toBe(6);
    const id = idIn(asked.stderr, "input-required")!;
    expect(asked.stderr).toContain(
      `task ${id} input-required (peer 'hermes'): Which environment: staging or production?`,
    );
  });

  it("answers a question in the question's conversation: Hermes takes it as a new task of that context", async () => {
    const asked = await cli("send", "--agent", "hermes", "--task", "[ask] deploy 1.4.3", "--wait", "--timeout", "10");
    expect(asked.code, asked.stderr).toBe(6);
    const id = idIn(asked.stderr, "input-required")!;
    const question = hermes.turns.find((t) => t.taskId === id)!;
    const turns = hermes.turns.length;
    const r = await cli("send", "--agent", "hermes", "--task-id", id, "--task", "production", "--wait");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("Hermes heard: production\n");
    const answer = await hermes.nextTurn(turns);
    // Hermes reads no taskId: only the context carries the conversation to the same agent session.
    expect(answer.contextId).toBe(question.contextId);
    expect(answer.taskId).not.toBe(id);
    expect(r.stderr).toContain(
      `note: peer 'hermes' took the message as a new task ${answer.taskId} in the same conversation (context ${question.contextId}), not as part of task ${id}`,
    );
    expect(r.stderr).toContain(`task ${answer.taskId} completed (peer 'hermes')`);
  });

  it("status, status --wait and tasks list read Hermes's tasks; an unknown one is not found (exit 3)", async () => {
    const sent = await cli("send", "--agent", "hermes", "--task", "status please");
    expect(sent.code, sent.stderr).toBe(0);
    const [id, state] = sent.stdout.trim().split("\t");
    expect(state).toBe("working");
    const waited = await cli("status", "--agent", "hermes", "--task-id", id, "--wait");
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.stdout).toBe("Hermes heard: status please\n");
    const status = await cli("status", "--agent", "hermes", "--task-id", id, "--json");
    expect(JSON.parse(status.stdout)).toMatchObject({
      id,
      status: { state: "TASK_STATE_COMPLETED" },
      artifacts: [{ parts: [{ text: "Hermes heard: status please", mediaType: "text/plain" }] }],
    });
    const list = await cli("tasks", "list", "--agent", "hermes");
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain(id);
    const missing = await cli("status", "--agent", "hermes", "--task-id", "task-0000000000000000");
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain("peer 'hermes' answered error -32001: task not found: task-0000000000000000");
  });

  it("cancel marks a running Hermes task canceled; a second cancel is refused as not cancelable", async () => {
    const sent = await cli("send", "--agent", "hermes", "--task", "[hold] a long job");
    const id = sent.stdout.split("\t")[0];
    const r = await cli("cancel", "--agent", "hermes", "--task-id", id);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`task ${id} canceled (peer 'hermes')`);
    expect(hermes.stateOf(id)).toBe("TASK_STATE_CANCELED");
    const again = await cli("cancel", "--agent", "hermes", "--task-id", id);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`peer 'hermes': task ${id} already TASK_STATE_CANCELED`);
  });

  it("a token Hermes does not know: 401 (-32050, no WWW-Authenticate) names the token file, exit 8", async () => {
    const wrong = join(dir, "wrong.token");
    writeFileSync(wrong, "not-the-token\n", { mode: 0o600 });
    expect((await cli("peers", "add", "wrong", hermes.url, "--auth", "bearer", "--token-file", wrong)).code).toBe(0);
    const r = await cli("send", "--agent", "wrong", "--task", "hello", "--wait");
    expect(r.code).toBe(8);
    expect(r.stderr).toContain(`peer 'wrong' at ${hermes.url} refused the token in ${wrong} (answered HTTP 401)`);
  });

  it("Hermes's rate limit (HTTP 429, -32051) is reported as its error", async () => {
    const limited = await startHermesA2AServer({ port: 0, peerTokens: { alpha: TOKEN }, rateLimit: 1 });
    try {
      expect(
        (await cli("peers", "add", "limited", limited.url, "--auth", "bearer", "--token-file", tokenFile)).code,
      ).toBe(0);
      expect((await cli("send", "--agent", "limited", "--task", "one")).code).toBe(0);
      const r = await cli("send", "--agent", "limited", "--task", "two");
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("peer 'limited' answered error -32051: rate limit exceeded");
    } finally {
      await limited.stop();
    }
  });

  it("never printed the token", () => {
    expect(printed.join("\n")).not.toContain(TOKEN);
  });
});
