import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/registry";
import { bufferIo } from "../../src/cli/io";
import { startNode, type RunningNode } from "../../src/node";
import { DEFAULTS } from "../../src/config";
import { createLogger } from "../../src/log";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { startFakeModel, type FakeModel } from "../helpers/fake-openai";

let fleet: Fleet;
let beta: RunningNode;
let slow: RunningNode;
let model: FakeModel;
let talker: RunningNode;
let chatty: FakeModel;
const quiet = createLogger(() => {}, "warn");

async function cli(...args: string[]) {
  const io = bufferIo();
  const code = await runCli(["--home", fleet.homes.alpha, ...args], io);
  return { code, out: io.out(), err: io.err() };
}

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta", "gamma"]);
  beta = await startNode(fleet.homes.beta, { ...DEFAULTS, host: "127.0.0.1", port: 0, executor: "echo" }, quiet);
  model = startFakeModel({ hold: true });
  slow = await startNode(fleet.homes.gamma, { ...DEFAULTS, host: "127.0.0.1", port: 0, executor: "openai", modelUrl: model.url }, quiet);
  expect((await cli("peers", "add", "beta", beta.url)).code).toBe(0);
  expect((await cli("peers", "add", "gamma", slow.url)).code).toBe(0);
  expect((await cli("peers", "add", "impostor", beta.url)).code).toBe(0);
  chatty = startFakeModel({ reply: () => "one two three four" });
  talker = await startNode(fleet.homes.delta ?? fleet.homes.gamma, { ...DEFAULTS, host: "127.0.0.1", port: 0, executor: "openai", modelUrl: chatty.url }, quiet);
});
afterAll(async () => {
  model.release();
  await beta?.stop();
  await slow?.stop();
  await talker?.stop();
  model.stop();
  chatty.stop();
  fleet.cleanup();
});

describe("send and status", () => {
  it("send --wait prints the result on stdout and the status on stderr", async () => {
    const r = await cli("send", "--agent", "beta", "--task", "hello there", "--wait");
    expect(r.code).toBe(0);
    expect(r.out).toBe("hello there\n");
    expect(r.err).toMatch(/^task [0-9A-Z]{26} completed \(peer 'beta'\)\n$/);
  });

  it("send --wait --json prints the bare Task on one line", async () => {
    const r = await cli("send", "--agent", "beta", "--task", "as json", "--wait", "--json");
    expect(r.code).toBe(0);
    expect(r.out.trim().split("\n")).toHaveLength(1);
    const task = JSON.parse(r.out);
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(task.artifacts[0].parts[0].text).toBe("as json");
    expect(task.kind).toBeUndefined();
  });

  it("send without --wait prints ID and state; status agrees", async () => {
    const r = await cli("send", "--agent", "beta", "--task", "later");
    expect(r.code).toBe(0);
    const [id, state] = r.out.trim().split("\t");
    expect(id).toMatch(/^[0-9A-Z]{26}$/);
    expect(["submitted", "working", "completed"]).toContain(state);
    const s = await cli("status", "--agent", "beta", "--task-id", id, "--json");
    expect(s.code).toBe(0);
    expect(JSON.parse(s.out)).toMatchObject({ id, status: { state: "TASK_STATE_COMPLETED" }, artifacts: [{ parts: [{ text: "later" }] }] });
    const human = await cli("status", "--agent", "beta", "--task-id", id);
    expect(human.out).toBe(`task ${id} completed (peer 'beta')\nlater\n`);
  });

  it("send --stream prints the answer as its tokens arrive, then the status line", async () => {
    const r = await cli("send", "--agent", talker.url, "--task", "talk", "--stream");
    expect(r.code).toBe(0);
    expect(r.out).toBe("one two three four\n");
    expect(r.err).toMatch(/^task [0-9A-Z]{26} completed/m);
    const j = await cli("send", "--agent", talker.url, "--task", "talk", "--stream", "--json");
    const items = j.out.trim().split("\n").map((l) => JSON.parse(l));
    expect(Object.keys(items[0])).toEqual(["task"]);
    expect(items.filter((i) => i.artifactUpdate).map((i) => i.artifactUpdate.artifact.parts[0].text).join("")).toBe("one two three four");
    expect(items.at(-1).statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("refuses an empty task before contacting anyone", async () => {
    const r = await cli("send", "--agent", "beta", "--task", "", "--wait");
    expect(r.code).toBe(2);
    expect(r.err).toContain("--task is empty");
  });

  it("gives up waiting at --timeout with exit 5, and the task goes on", async () => {
    const r = await cli("send", "--agent", "gamma", "--task", "think hard", "--wait", "--timeout", "0.2", "--json");
    expect(r.code).toBe(5);
    const task = JSON.parse(r.out);
    expect(task.status.state).toBe("TASK_STATE_WORKING");
    expect(r.err).toContain(`gave up waiting after 0.2s; task ${task.id} is still working`);
    expect(r.err).toContain(`next: check later with 'a2a-node status --agent gamma --task-id ${task.id}'`);
    model.release();
    await model.received(1);
    const done = await cli("send", "--agent", "gamma", "--task", "again", "--wait", "--json");
    expect(JSON.parse(done.out).status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("status of an unknown task exits 3", async () => {
    const r = await cli("status", "--agent", "beta", "--task-id", "01ZZZZZZZZZZZZZZZZZZZZZZZZ");
    expect(r.code).toBe(3);
    expect(r.err).toContain("Task not found");
  });

  it("refuses a peer whose certificate is for someone else (exit 4)", async () => {
    const r = await cli("send", "--agent", "impostor", "--task", "x");
    expect(r.code).toBe(4);
    expect(r.err).toContain("the server's certificate is for 'beta', not 'impostor'");
  });

  it("an unknown peer and a dead port give exit 3 and 4 with a next step", async () => {
    const unknown = await cli("send", "--agent", "delta", "--task", "x");
    expect(unknown.code).toBe(3);
    expect(unknown.err).toContain("next: add it with 'a2a-node peers add delta");
    const dead = await cli("send", "--agent", "https://127.0.0.1:1", "--task", "x");
    expect(dead.code).toBe(4);
    expect(dead.err).toContain("connection refused");
    expect(dead.err).toContain("next: is 'a2a-node serve' running there");
  });

  it.each([
    [["send", "--task", "x"], "--agent is required"],
    [["send", "--agent", "beta"], "--task is required"],
    [["send", "--agent", "beta", "--task", "x", "--timeout", "-1"], "--timeout must be a positive number"],
    [["send", "--agent", "beta", "--task", "x", "--timeout", "soon"], "--timeout must be a number"],
    [["send", "--agent", "beta", "stray"], "unexpected argument 'stray'"],
    [["status", "--agent", "beta"], "--task-id is required"],
    [["status", "--task-id", "x"], "--agent is required"],
  ])("%j is a usage error", async (args, message) => {
    const r = await cli(...(args as string[]));
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
