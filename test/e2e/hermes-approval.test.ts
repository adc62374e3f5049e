/**
 * A human approval crossing machines, end to end with compiled binaries: node beta runs tasks on a (fake)
 * Hermes Agent; node alpha delegates "deploy it" through the CLI, sees the task wait for input with Hermes's
 * question, and answers it with `send --task-id ID --task "yes"`; the run continues and completes. The
 * only fake is the Hermes runs API.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runBinary, serveBinary, type CliRun, type ServedBinary } from "../helpers/binary";
import { hermes, startFakeHermes, type FakeHermes } from "../helpers/fake-hermes";
import { makeFleet, type Fleet } from "../helpers/fleet";

const API_KEY = `hermes-${crypto.randomUUID()}`;
const PROMPT = "Deploy build 1.4.2 to production?";

let fleet: Fleet;
let fake: FakeHermes;
let beta: ServedBinary;

const alpha = (...args: string[]): Promise<CliRun> => runBinary(["--home", fleet.homes.alpha!, ...args]);

function onlyJsonLine(r: CliRun): any {
  const lines = r.stdout.split("\n").filter((l) => l !== "");
  expect(lines, r.stdout + r.stderr).toHaveLength(1);
  return JSON.parse(lines[0]!);
}

const textOf = (task: any): string => (task.artifacts ?? []).flatMap((a: any) => a.parts.map((p: any) => p.text ?? "")).join("");

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta"]);
  fake = startFakeHermes({
    apiKey: API_KEY, // anything without the key gets 401, so a missing key fails the task
    script: [
      hermes.toolCall("kubectl", { args: ["get", "deployments"] }),
      hermes.toolResult("kubectl", "web 3/3"),
      hermes.approval("approve-deploy-1", PROMPT, ["yes", "no"], { no: [hermes.failed("the operator declined")] }),
      hermes.toolCall("kubectl", { args: ["rollout"] }),
      hermes.delta("Deployed "),
      hermes.delta("1.4.2 "),
      hermes.delta("to production."),
      hermes.completed(),
    ],
  });
  beta = await serveBinary(fleet.homes.beta!, ["--executor", "hermes", "--hermes-url", fake.url], { HERMES_API_KEY: API_KEY });
  const added = await alpha("peers", "add", "beta", beta.url);
  expect(added.code, added.stderr).toBe(0);
});

afterAll(async () => {
  await beta?.stop("SIGKILL").catch(() => undefined);
  fake?.stop();
  fleet?.cleanup();
});

describe("a Hermes approval answered from another node", () => {
  let taskId: string;

  it("send --wait exits 6 with the task INPUT_REQUIRED, carrying Hermes's question", async () => {
    const r = await alpha("send", "--agent", "beta", "--task", "deploy it", "--wait", "--json");
    expect(r.code, r.stderr).toBe(6);
    const task = onlyJsonLine(r);
    taskId = task.id;
    expect(task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(task.status.message.parts[0].text).toContain(PROMPT);

    const run = await fake.waitingForApproval();
    expect(run.body.input).toBe("deploy it");
    expect(run.idempotencyKey).toBe(taskId);
    const start = fake.requests.find((q) => q.method === "POST" && q.path === "/v1/runs")!;
    expect(start.bearer).toBe(API_KEY);
    expect(start.headers["idempotency-key"]).toBe(taskId);
    expect(fake.runsCreated).toBe(1);
  });

  it("send --task-id ID --task yes --wait answers it: the run continues and the task COMPLETES with the streamed answer", async () => {
    expect(taskId).toBeTruthy();
    const r = await alpha("send", "--agent", "beta", "--task-id", taskId, "--task", "yes", "--wait", "--json");
    expect(r.code, r.stderr).toBe(0);
    const task = onlyJsonLine(r);
    expect(task.id).toBe(taskId);
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(textOf(task)).toContain("Deployed 1.4.2 to production.");

    const run = [...fake.runs.values()][0]!;
    const answer = await fake.approvalAnswered(run.id);
    expect(answer).toMatchObject({ approval_id: "approve-deploy-1", choice: "yes" });
    expect(run.status).toBe("completed");
    expect(fake.runsCreated).toBe(1); // the same run went on; no second run was started
    const approvalPost = fake.requests.find((q) => q.path === `/v1/runs/${run.id}/approval`)!;
    expect(approvalPost.bearer).toBe(API_KEY);
    // Every runs-API call beta made carried the key from HERMES_API_KEY.
    expect(fake.requests.filter((q) => q.path.startsWith("/v1/")).every((q) => q.bearer === API_KEY)).toBe(true);
  });

  it("a completed task takes no further answer (-32004), and Hermes hears nothing more", async () => {
    const r = await alpha("send", "--agent", "beta", "--task-id", taskId, "--task", "yes again", "--wait", "--json");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/-32004/);
    expect(r.stderr).toContain("TASK_STATE_COMPLETED");
    expect([...fake.runs.values()][0]!.approvals).toHaveLength(1);
  });
});
