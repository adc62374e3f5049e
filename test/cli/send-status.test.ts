/**
 * send, status, cancel and tasks against real nodes (in-process, real mTLS on loopback, real SQLite), driven
 * through runCli with recorded output. What needs the compiled binary, a terminal or a signal is in
 * test/e2e/client-cli.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../../src/cli/registry";
import { bufferIo, type Io } from "../../src/cli/io";
import { startNode, type RunningNode } from "../../src/node";
import { DEFAULTS } from "../../src/config";
import { createLogger } from "../../src/log";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { startFakeModel, type FakeModel } from "../fakes/openai";
import { startGatedModel, type GatedModel } from "../fakes/gated-model";
import { openClientSession } from "../../src/cli/client-session";
import { followTask } from "../../src/cli/follow-task";
import type { StreamResponse, Task } from "../../src/protocol/types";

let fleet: Fleet;
let beta: RunningNode;
let slow: RunningNode;
let gated: GatedModel;
let talker: RunningNode;
let chatty: FakeModel;
let tiny: RunningNode;
let files: string;
const quiet = createLogger(() => {}, "warn");

async function cli(args: string[], options: { stdin?: string; interrupt?: AbortSignal } = {}) {
  const io: Io & { out(): string; err(): string } = {
    ...bufferIo({}, { stdin: options.stdin }),
    interruptSignal: options.interrupt,
  };
  const code = await runCli(["--home", fleet.homes.alpha, ...args], io);
  return { code, out: io.out(), err: io.err() };
}
const run = (...args: string[]) => cli(args);
const ID = /[0-9A-Z]{26}/;

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta", "gamma", "delta", "epsilon"]);
  const base = { ...DEFAULTS, host: "127.0.0.1", port: 0 };
  beta = await startNode(fleet.homes.beta, { ...base, executor: "echo" }, quiet);
  gated = startGatedModel({ holdAfterChunks: 2 });
  slow = await startNode(fleet.homes.gamma, { ...base, executor: "openai", modelUrl: gated.url }, quiet);
  // The model answers with what it was given, so a test sees exactly what reached it.
  chatty = startFakeModel({ reply: (m) => `saw: ${m.at(-1)?.content}` });
  talker = await startNode(fleet.homes.delta, { ...base, executor: "openai", modelUrl: chatty.url }, quiet);
  tiny = await startNode(fleet.homes.epsilon, { ...base, executor: "echo", maxBodyBytes: 4096 }, quiet);
  for (const [name, url] of [
    ["beta", beta.url],
    ["gamma", slow.url],
    ["delta", talker.url],
    ["epsilon", tiny.url],
    ["impostor", beta.url],
  ])
    expect((await run("peers", "add", name, url)).code).toBe(0);
  files = join(fleet.root, "files");
  mkdirSync(files);
});
afterAll(async () => {
  gated?.stop();
  chatty?.stop();
  for (const n of [beta, slow, talker, tiny]) await n?.stop();
  fleet?.cleanup();
});

describe("send", () => {
  it("--wait prints the task id on stderr at once, then the result on stdout and the status on stderr", async () => {
    const r = await run("send", "--agent", "beta", "--task", "hello there", "--wait");
    expect(r.code).toBe(0);
    expect(r.out).toBe("hello there\n");
    const id = ID.exec(r.err)![0];
    expect(r.err).toBe(`task ${id} accepted by peer 'beta'\ntask ${id} completed (peer 'beta')\n`);
  });

  it("--wait --json prints the bare Task on one line, and nothing on stderr", async () => {
    const r = await run("send", "--agent", "beta", "--task", "as json", "--wait", "--json");
    expect(r.code).toBe(0);
    expect(r.out.trim().split("\n")).toHaveLength(1);
    const task = JSON.parse(r.out);
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(task.artifacts[0].parts[0].text).toBe("as json");
    expect(task.kind).toBeUndefined();
    expect(r.err).toBe("");
  });

  it("without --wait prints ID and state; status agrees", async () => {
    const r = await run("send", "--agent", "beta", "--task", "later");
    expect(r.code).toBe(0);
    const [id, state] = r.out.trim().split("\t");
    expect(id).toMatch(/^[0-9A-Z]{26}$/);
    expect(["submitted", "working", "completed"]).toContain(state);
    const s = await run("status", "--agent", "beta", "--task-id", id, "--wait", "--json");
    expect(s.code).toBe(0);
    expect(JSON.parse(s.out)).toMatchObject({
      id,
      status: { state: "TASK_STATE_COMPLETED" },
      artifacts: [{ parts: [{ text: "later" }] }],
    });
    const human = await run("status", "--agent", "beta", "--task-id", id);
    expect(human.out).toBe(`task ${id} completed (peer 'beta')\nlater\n`);
  });

  it("without --wait says on stderr how to follow the task; status and cancel find its peer without --agent", async () => {
    const r = await run("send", "--agent", "gamma", "--task", "follow me [hold]");
    expect(r.code).toBe(0);
    const [id] = r.out.trim().split("\t");
    expect(r.err).toBe(`follow it with: a2a-node status --agent gamma --task-id ${id} --wait\n`);
    await gated.arrival("follow me");
    // send --help's example, as written: the home remembers which peer the task went to.
    const s = await run("status", "--task-id", id);
    expect(s.code).toBe(0);
    expect(s.out).toBe(`task ${id} working (peer 'gamma')\n`);
    const c = await run("cancel", "--task-id", id);
    expect(c).toMatchObject({ code: 0, out: `task ${id} canceled (peer 'gamma'): canceled by alpha\n` });
    expect((await run("status", "--task-id", id, "--wait")).code).toBe(7);
    const elsewhere = await run("status", "--task-id", "01ZZZZZZZZZZZZZZZZZZZZZZZZ");
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.err).toContain("--agent is required: task 01ZZZZZZZZZZZZZZZZZZZZZZZZ was not sent from this home");
  });

  it("--stream prints the answer as its tokens arrive, between the accepted and the status lines", async () => {
    const r = await run("send", "--agent", "delta", "--task", "talk", "--stream");
    expect(r.code).toBe(0);
    expect(r.out).toBe("saw: talk\n");
    const id = ID.exec(r.err)![0];
    expect(r.err).toBe(`task ${id} accepted by peer 'delta'\ntask ${id} completed (peer 'delta')\n`);
    expect((await run("status", "--task-id", id)).out).toBe(`task ${id} completed (peer 'delta')\nsaw: talk\n`);
    const j = await run("send", "--agent", "delta", "--task", "talk", "--stream", "--json");
    const items = j.out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(Object.keys(items[0])).toEqual(["task"]);
    expect(
      items
        .filter((i) => i.artifactUpdate)
        .map((i) => i.artifactUpdate.artifact.parts[0].text)
        .join(""),
    ).toBe("saw: talk");
    expect(items.at(-1).statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
    expect(j.err).toBe("");
  });

  it("--task - reads the task from standard input", async () => {
    const r = await cli(["send", "--agent", "beta", "--task", "-", "--wait"], { stdin: "from a pipe\nsecond line\n" });
    expect(r.code).toBe(0);
    expect(r.out).toBe("from a pipe\nsecond line\n");
  });

  it.each([
    ["empty", ""],
    ["only blank lines", "\n  \n"],
  ])("--task - with %s standard input is a usage error that says how to pipe the text", async (_label, stdin) => {
    const r = await cli(["send", "--agent", "beta", "--task", "-", "--wait"], { stdin });
    expect(r.code).toBe(2);
    expect(r.err).toContain("--task -: standard input was empty");
    expect(r.err).toContain("echo TEXT | a2a-node send");
  });

  it("gives up waiting at --timeout with exit 5, naming the task and how to follow it", async () => {
    const r = await run(
      "send",
      "--agent",
      "gamma",
      "--task",
      "think hard [hold]",
      "--wait",
      "--timeout",
      "0.3",
      "--json",
    );
    expect(r.code, r.err).toBe(5);
    const task = JSON.parse(r.out);
    expect(task.status.state).toBe("TASK_STATE_WORKING");
    expect(r.err).toContain(`gave up waiting after 0.3s; task ${task.id} is still working`);
    expect(r.err).toContain(`next: follow it with 'a2a-node status --agent gamma --task-id ${task.id} --wait'`);
    // And that command picks the wait up: it ends when the model answers.
    const waiting = run("status", "--agent", "gamma", "--task-id", task.id, "--wait");
    await gated.arrival("think hard");
    gated.release("think hard");
    const done = await waiting;
    expect(done.code).toBe(0);
    expect(done.out).toBe("echo: think hard [hold]\n");
    expect(done.err).toBe(`task ${task.id} completed (peer 'gamma')\n`);
  });

  it("Ctrl-C while waiting exits 130, saying the task goes on and how to follow or cancel it", async () => {
    const ctrl = new AbortController();
    const waiting = cli(["send", "--agent", "gamma", "--task", "interrupt me [hold]", "--wait"], {
      interrupt: ctrl.signal,
    });
    await gated.arrival("interrupt me");
    ctrl.abort();
    const r = await waiting;
    expect(r.code).toBe(130);
    const id = ID.exec(r.err)![0];
    expect(r.err).toContain(`a2a-node: stopped waiting; task ${id} goes on at peer 'gamma' (working)`);
    expect(r.err).toContain(
      `next: follow it with 'a2a-node status --agent gamma --task-id ${id} --wait', or cancel it with 'a2a-node cancel --agent gamma --task-id ${id}'`,
    );
    expect(r.err).not.toContain("gave up");
    gated.release("interrupt me");
  });

  it("a task canceled while send --wait waits for it exits 7", async () => {
    const waiting = run("send", "--agent", "gamma", "--task", "cancel me [hold]", "--wait");
    await gated.arrival("cancel me");
    const listed = JSON.parse((await run("tasks", "list", "--agent", "gamma", "--state", "working", "--json")).out);
    const id = listed.tasks.find((t: any) => t.task.status.state === "TASK_STATE_WORKING").task.id;
    const c = await run("cancel", "--agent", "gamma", "--task-id", id);
    expect(c).toMatchObject({ code: 0, out: `task ${id} canceled (peer 'gamma'): canceled by alpha\n` });
    const r = await waiting;
    expect(r.code).toBe(7);
    expect(r.err).toContain(`task ${id} canceled (peer 'gamma')`);
    const again = await run("cancel", "--agent", "gamma", "--task-id", id);
    expect(again.code).toBe(1);
    expect(again.err).toContain("cannot be canceled: it is TASK_STATE_CANCELED");
    expect(again.err).toContain(`next: see how it ended with 'a2a-node status --agent gamma --task-id ${id}'`);
    expect((await run("status", "--agent", "gamma", "--task-id", id, "--wait")).code).toBe(7);
  });

  it("--stream shows tokens before a pause, keeps waiting through it, and ends with the whole answer", async () => {
    const waiting = run("send", "--agent", "gamma", "--task", "stream with a pause [hold] one two three", "--stream");
    await gated.chunks("stream with a pause", 2);
    gated.release("stream with a pause");
    const r = await waiting;
    expect(r.code).toBe(0);
    expect(r.out).toBe("echo: stream with a pause [hold] one two three\n");
  });
});

describe("send --file", () => {
  it("attaches text files as file parts the model reads as text", async () => {
    writeFileSync(join(files, "notes.md"), "# Notes\nship it\n");
    writeFileSync(join(files, "data.json"), '{"n":1}');
    const r = await run(
      "send",
      "--agent",
      "delta",
      "--task",
      "summarise",
      "--file",
      join(files, "notes.md"),
      "--file",
      join(files, "data.json"),
      "--wait",
      "--json",
    );
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out).artifacts[0].parts[0].text).toBe(
      'saw: summarise\nFile notes.md (text/markdown):\n# Notes\nship it\n\nFile data.json (application/json):\n{"n":1}',
    );
    const sent = chatty.requests.at(-1)!.body.messages.at(-1);
    expect(sent.role).toBe("user");
  });

  it("attaches an image, which reaches the model as an image_url data: URL", async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    writeFileSync(join(files, "chart.png"), png);
    const r = await run("send", "--agent", "delta", "--task", "describe", "--file", join(files, "chart.png"), "--wait");
    expect(r.code, r.err).toBe(0);
    expect(chatty.requests.at(-1)!.body.messages.at(-1).content).toEqual([
      { type: "text", text: "describe" },
      { type: "image_url", image_url: { url: `data:image/png;base64,${Buffer.from(png).toString("base64")}` } },
    ]);
  });

  it("a file type the peer's model cannot take is refused before a task exists (-32005), naming the file", async () => {
    writeFileSync(join(files, "report.pdf"), "%PDF-1.7 fake");
    const r = await run("send", "--agent", "delta", "--task", "read", "--file", join(files, "report.pdf"), "--wait");
    expect(r.code).toBe(1);
    expect(r.err).toContain("-32005");
    expect(r.err).toContain("report.pdf (application/pdf)");
  });

  it("files over the peer's body limit: exit 1 naming the sizes and what to do", async () => {
    writeFileSync(join(files, "big.txt"), "x".repeat(8000));
    const r = await run("send", "--agent", "epsilon", "--task", "too much", "--file", join(files, "big.txt"), "--wait");
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /peer 'epsilon' refused the message with its files: request body of \d+ bytes exceeds this node's limit of 4096 bytes/,
    );
    expect(r.err).toContain("next: send smaller or fewer files");
    expect(r.err).toContain("--max-body");
  });

  it.each([
    [["--file", "/nonexistent/notes.txt"], "--file /nonexistent/notes.txt: no such file"],
    [["--file", "/tmp"], "--file /tmp is a directory"],
    [["--file"], "--file needs a value (PATH)"],
  ])("%j is a usage error before anyone is contacted", async (extra, message) => {
    const r = await run("send", "--agent", "beta", "--task", "x", ...(extra as string[]));
    expect(r.code).toBe(2);
    expect(r.err).toContain(message);
  });
});

describe("status, cancel, tasks", () => {
  it("status of an unknown task exits 3; cancel of one too", async () => {
    const r = await run("status", "--agent", "beta", "--task-id", "01ZZZZZZZZZZZZZZZZZZZZZZZZ");
    expect(r.code).toBe(3);
    expect(r.err).toContain("Task not found");
    expect((await run("cancel", "--agent", "beta", "--task-id", "01ZZZZZZZZZZZZZZZZZZZZZZZZ")).code).toBe(3);
    expect((await run("status", "--agent", "beta", "--task-id", "01ZZZZZZZZZZZZZZZZZZZZZZZZ", "--wait")).code).toBe(3);
  });

  it("a wait the peer will not stream (the task ended meanwhile: SubscribeToTask -32004) asks with GetTask instead", async () => {
    const sent = await run("send", "--agent", "gamma", "--task", "ended meanwhile [hold]", "--json");
    const stale = JSON.parse(sent.out) as Task;
    expect(stale.status.state).not.toBe("TASK_STATE_COMPLETED");
    await gated.arrival("ended meanwhile");
    gated.release("ended meanwhile");
    expect((await run("status", "--agent", "gamma", "--task-id", stale.id, "--wait")).code).toBe(0);
    const session = await openClientSession(fleet.homes.alpha, "gamma");
    const seen: StreamResponse[] = [];
    const end = await followTask(session, stale, { deadline: Date.now() + 10_000, onItem: (item) => seen.push(item) });
    expect(end.reason).toBe("settled");
    expect(end.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(end.task.artifacts?.[0]?.parts[0]?.text).toBe("echo: ended meanwhile [hold]");
    expect(seen).toEqual([{ task: end.task }]); // one poll, no stream
  });

  it("status --wait --timeout on a running task exits 5", async () => {
    const sent = await run("send", "--agent", "gamma", "--task", "status timeout [hold]");
    const id = sent.out.split("\t")[0];
    const r = await run("status", "--agent", "gamma", "--task-id", id, "--wait", "--timeout", "0.2");
    expect(r.code).toBe(5);
    expect(r.err).toContain(`gave up waiting after 0.2s; task ${id} is still`);
    gated.release("status timeout");
  });

  it("tasks list --agent shows this node's tasks on that peer, newest first, as a table and as JSON", async () => {
    const a = (await run("send", "--agent", "beta", "--task", "list me 1")).out.split("\t")[0];
    const b = (await run("send", "--agent", "beta", "--task", "list me 2")).out.split("\t")[0];
    await run("status", "--agent", "beta", "--task-id", b, "--wait");
    const json = await run("tasks", "list", "--agent", "beta", "--limit", "2", "--json");
    expect(json.code).toBe(0);
    const listed = JSON.parse(json.out);
    expect(listed.errors).toEqual([]);
    expect(listed.tasks.map((t: any) => [t.peer, t.task.id])).toEqual([
      ["beta", b],
      ["beta", a],
    ]);
    const text = await run("tasks", "list", "--agent", "beta", "--limit", "2");
    expect(text.out).toMatch(/^PEER\s+ID\s+STATE\s+UPDATED\s+MESSAGE\n/);
    expect(text.out.split("\n")[1]).toMatch(new RegExp(`^beta\\s+${b}\\s+completed\\s+\\d+s ago$`));
  });

  it("tasks list --state filters; an unknown state is a usage error listing the states", async () => {
    const r = await run("tasks", "list", "--agent", "beta", "--state", "input-required");
    expect(r).toMatchObject({ code: 0, out: "no tasks in state input-required\n" });
    const bad = await run("tasks", "list", "--state", "done");
    expect(bad.code).toBe(2);
    expect(bad.err).toContain(
      "--state 'done' is not a task state (submitted, working, input-required, auth-required, completed, canceled, failed, rejected)",
    );
  });

  it("tasks list without --agent asks every peer, lists what answered and names the peer that did not (exit 8)", async () => {
    const r = await run("tasks", "list", "--json");
    expect(r.code).toBe(8);
    const listed = JSON.parse(r.out);
    expect(new Set(listed.tasks.map((t: any) => t.peer))).toEqual(
      new Set(["beta", "gamma", "delta", "epsilon"].filter((p) => listed.tasks.some((t: any) => t.peer === p))),
    );
    expect(listed.tasks.some((t: any) => t.peer === "beta")).toBe(true);
    expect(listed.errors).toEqual([
      expect.objectContaining({
        peer: "impostor",
        error: expect.stringContaining("the server is fleet node 'beta', not 'impostor'"),
      }),
    ]);
    const text = await run("tasks", "list");
    expect(text.code).toBe(8);
    expect(text.err).toContain("a2a-node: peer 'impostor' at");
    expect(text.out).toMatch(/^PEER/);
  });

  it.each([
    [["tasks"], "tasks needs a subcommand: list"],
    [["tasks", "show"], "unknown tasks subcommand 'show'"],
    [["tasks", "list", "beta"], "tasks list takes no arguments"],
    [["tasks", "list", "--limit", "0"], "--limit must be a whole number from 1 to 1000"],
    [["cancel", "--agent", "beta"], "--task-id is required"],
    [["cancel", "--task-id", "x"], "--agent is required"],
    [["status", "--agent", "beta", "--task-id", "x", "--timeout", "3"], "--timeout goes with --wait"],
  ])("%j is a usage error", async (args, message) => {
    const r = await run(...(args as string[]));
    expect(r.code).toBe(2);
    expect(r.err).toContain(message);
  });
});

describe("errors that tell the cases apart", () => {
  it("a peer whose certificate is for someone else: refused (exit 8)", async () => {
    const r = await run("send", "--agent", "impostor", "--task", "x");
    expect(r.code).toBe(8);
    expect(r.err).toContain("the server is fleet node 'beta', not 'impostor' (the name its fleet certificate carries)");
    expect(r.err).toContain(
      `next: ${beta.url} now reaches 'beta', not 'impostor': check where impostor listens, then 'a2a-node peers add impostor https://HOST:PORT --pin --replace'`,
    );
  });

  it("an unknown peer: exit 3 with the command that adds it; a name in capitals finds the peer", async () => {
    const unknown = await run("send", "--agent", "zeta", "--task", "x");
    expect(unknown.code).toBe(3);
    expect(unknown.err).toContain("next: add it with 'a2a-node peers add zeta");
    expect((await run("send", "--agent", "Beta", "--task", "x", "--wait")).code).toBe(0);
  });

  it("nothing listening on this machine: exit 4, suggesting the local service", async () => {
    const dead = await run("send", "--agent", "https://127.0.0.1:1", "--task", "x");
    expect(dead.code).toBe(4);
    expect(dead.err).toContain("connection refused (nothing listens on 127.0.0.1:1)");
    expect(dead.err).toContain("next: is the node on this machine running? check 'systemctl status a2a-node'");
  });

  it.each([
    [["send", "--task", "x"], "--agent is required"],
    [["send", "--agent", "beta"], "--task is required"],
    [["send", "--agent", "beta", "--task", ""], "--task is empty"],
    [["send", "--agent", "beta", "--task", "x", "--timeout", "-1"], "--timeout must be a positive number"],
    [["send", "--agent", "beta", "--task", "x", "--timeout", "soon"], "--timeout must be a number"],
    [["send", "--agent", "beta", "--task", "x", "--wait", "--stream"], "--wait and --stream do not go together"],
    [["send", "--agent", "beta", "stray"], "unexpected argument 'stray'"],
    [
      ["send", "--agent", "http://127.0.0.1:9443", "--task", "x"],
      "--agent: 'http://127.0.0.1:9443' is plain HTTP; peers speak mutual TLS only",
    ],
    [["send", "--agent", "ftp://x", "--task", "x"], "is not an https:// URL"],
    [["status", "--agent", "beta"], "--task-id is required"],
    [["status", "--task-id", "x"], "--agent is required"],
  ])("%j is a usage error", async (args, message) => {
    const r = await run(...(args as string[]));
    expect(r.code).toBe(2);
    expect(r.err).toContain(message);
  });

  it("without an identity, says to run init-pki", async () => {
    const io = bufferIo();
    const code = await runCli(["--home", `${fleet.root}/empty`, "send", "--agent", "beta", "--task", "x"], io);
    expect(code).toBe(1);
    expect(io.err()).toContain("init-pki");
  });
});
