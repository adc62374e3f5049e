/**
 * The node's own keys against the real Hermes Agent API server (0.18.2, /work/shared/real-hermes, with its
 * scripted model): a caller that names another caller's run in SendMessage's metadata (`hermes/runId`, with
 * `hermes/pendingApproval`) gets a run of its own, never the other run's answer, and its "yes" never answers the
 * other caller's approval. The same scenario runs against the twin (both server generations) in
 * test/executors/hermes-executor.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Task } from "../../src/protocol/types";
import { answerText, startHermesNode, userMessage, who, type HermesNode } from "../helpers/hermes-node";

const REAL_HERMES = "/work/shared/real-hermes/real-hermes";

let dir: string;
let env: Record<string, string> = {};
let node: HermesNode;

async function realHermes(...args: string[]): Promise<string> {
  const proc = Bun.spawn([REAL_HERMES, ...args], { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`real-hermes ${args.join(" ")} exited ${code}:\n${out}${err}`);
  return out;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "a2a-real-hermes-"));
  await realHermes("setup", dir);
  const out = await realHermes("start", dir);
  env = Object.fromEntries(out.split("\n").filter((l) => l.includes("=")).map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
  node = await startHermesNode({ url: env.HERMES_URL }, { apiKey: readFileSync(env.HERMES_API_KEY_FILE, "utf8").trim(), timing: { pollFirstMs: 100, pollMaxMs: 500 } });
}, 240_000);

afterAll(async () => {
  await node?.close();
  if (dir) await realHermes("stop", dir).catch(() => {});
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

const asMallory = async (text: string, metadata: Record<string, unknown>): Promise<Task> => {
  const r = await node.handler.sendMessage({ message: userMessage(text), metadata }, who("mallory"));
  return (r as { task: Task }).task;
};

describe("a caller cannot steer another caller's Hermes run (the real Hermes server)", () => {
  it("another caller's finished run: its id in metadata gets the caller a run of its own, not that run's answer", async () => {
    const secret = await node.send("alpha secret report");
    expect(secret.status.state).toBe("TASK_STATE_COMPLETED");
    expect(answerText(secret)).toContain("FAKE-MODEL-OK: alpha secret report");
    const runId = secret.metadata?.["hermes/runId"] as string;
    expect(runId).toMatch(/^run_/);

    const took = await asMallory("mallory asks", { "hermes/runId": runId });
    expect(took.status.state).toBe("TASK_STATE_COMPLETED");
    expect(answerText(took)).toContain("FAKE-MODEL-OK: mallory asks");
    expect(answerText(took)).not.toContain("alpha secret");
    expect(took.metadata?.["hermes/runId"]).not.toBe(runId);

    // A run id that does not exist tells nothing: the task runs, it does not end FAILED "no longer knows run".
    const probe = await asMallory("probe", { "hermes/runId": "run_00000000000000000000000000000000" });
    expect(probe.status.state).toBe("TASK_STATE_COMPLETED");
  }, 120_000);

  it("another caller's pending approval: 'yes' with its run id and approval is the caller's own task, and the command does not run", async () => {
    const victim = join(env.SCRATCH, "prod");
    const asked = await node.send("DANGER-RM:prod");
    expect(asked.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(existsSync(victim)).toBe(true); // the model made it, the command would delete it
    const runId = asked.metadata?.["hermes/runId"] as string;
    const approval = asked.status.message!.metadata!["hermes/approval"];

    const yes = await asMallory("yes", { "hermes/runId": runId, "hermes/pendingApproval": approval });
    expect(yes.status.state).toBe("TASK_STATE_COMPLETED");
    expect(answerText(yes)).toContain("FAKE-MODEL-OK: yes");
    expect(existsSync(victim)).toBe(true);
    expect((await node.get(asked.id)).status.state).toBe("TASK_STATE_INPUT_REQUIRED");

    // alpha's own answer reaches its run: denied, the directory stays.
    const done = await node.answer(asked.id, "no");
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(existsSync(victim)).toBe(true);
  }, 180_000);
});
