/**
 * A Hermes approval crossing machines, end to end with compiled binaries: node beta runs tasks on a Hermes Agent
 * (the fake twin of its runs API, as the newer and the older server); node alpha delegates through the CLI,
 * sees the task wait for input with the command Hermes wants to run and the choices, and answers with
 * `send --task-id ID --task yes --stream`: the same Hermes run goes on, on the event stream beta held open the
 * whole time, and alpha sees the answer stream in. The only fake is the Hermes runs API.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runBinary, serveBinary, type CliRun, type ServedBinary } from "../helpers/binary";
import { hermes, startFakeHermes, type FakeHermes } from "../fakes/hermes/server";
import { makeFleet, type Fleet } from "../helpers/fleet";

const API_KEY = `hermes-${crypto.randomUUID()}`;
const DEPLOY = {
  command: "kubectl set image deploy/web web=web:1.4.2",
  description: "deploy build 1.4.2 to production",
};

describe.each(["newer", "older"] as const)("a Hermes approval answered from another node (%s Hermes)", (generation) => {
  let fleet: Fleet;
  let fake: FakeHermes;
  let beta: ServedBinary;
  let taskId: string;
  const alpha = (...args: string[]): Promise<CliRun> => runBinary(["--home", fleet.homes.alpha!, ...args]);

  beforeAll(async () => {
    fleet = await makeFleet(["alpha", "beta"]);
    fake = startFakeHermes({
      generation,
      apiKey: API_KEY, // anything without the key gets 401, so a missing key fails the task
      script: [
        hermes.delta("Checking the deployment first. "),
        ...hermes.tool("terminal", "kubectl get deploy web"),
        hermes.approval(DEPLOY, { deny: [hermes.delta("Not deployed."), hermes.completed()] }),
        ...hermes.tool("terminal", DEPLOY.command),
        hermes.delta("Deployed "),
        hermes.delta("1.4.2 "),
        hermes.delta("to production."),
        hermes.completed(),
      ],
    });
    beta = await serveBinary(fleet.homes.beta!, ["--executor", "hermes", "--hermes-url", fake.url], {
      HERMES_API_KEY: API_KEY,
    });
    const added = await alpha("peers", "add", "beta", beta.url);
    expect(added.code, added.stderr).toBe(0);
  });

  afterAll(async () => {
    await beta?.stop("SIGKILL").catch(() => undefined);
    await fake?.stop();
    fleet?.cleanup();
  });

  it("send --wait exits 6 with the task INPUT_REQUIRED, showing the command, why, the choices, and how to answer", async () => {
    const r = await alpha("send", "--agent", "beta", "--task", "deploy 1.4.2", "--wait");
    expect(r.code, r.stderr).toBe(6);
    const id = /^task (\S+) input-required \(peer 'beta'\)/m.exec(r.stderr);
    expect(id, r.stderr).not.toBeNull();
    taskId = id![1]!;
    // The id came first, as soon as beta took the task.
    expect(r.stderr.startsWith(`task ${taskId} accepted by peer 'beta'\n`), r.stderr).toBe(true);
    expect(r.stderr).toContain(`Why: ${DEPLOY.description}`);
    expect(r.stderr).toContain(`Command: ${DEPLOY.command}`);
    expect(r.stderr).toContain("Answer with one of: once, session, always, deny (yes means once, no means deny).");
    expect(r.stderr).toContain(
      `answer it with: a2a-node send --agent beta --task-id ${taskId} --task "YOUR ANSWER" --wait`,
    );

    const run = fake.runs[0]!;
    expect(run.request.userMessage).toBe("deploy 1.4.2");
    expect(fake.status(run.id)?.status).toBe("waiting_for_approval");
    expect(run.clientsLeft).toBe(0); // beta still holds the run's event stream open
    const start = fake.requests.find((q) => q.method === "POST" && q.path === "/v1/runs")!;
    expect(start.bearer).toBe(API_KEY);
    expect(start.headers["idempotency-key"]).toBe(taskId);
  });

  it("the same task in --json shows the approval's fields in the status message's metadata", async () => {
    const r = await alpha("status", "--agent", "beta", "--task-id", taskId, "--json");
    expect(r.code, r.stderr).toBe(0);
    const task = JSON.parse(r.stdout);
    expect(task.status.message.metadata["hermes/approval"]).toMatchObject({
      run_id: fake.runs[0]!.id,
      command: DEPLOY.command,
      description: DEPLOY.description,
      choices: ["once", "session", "always", "deny"],
    });
  });

  it("an answer that is not a choice is refused with the choices listed, and the task keeps waiting", async () => {
    const r = await alpha("send", "--agent", "beta", "--task-id", taskId, "--task", "later", "--wait");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("-32602");
    expect(r.stderr).toContain("answer one of: once, session, always, deny");
    expect(fake.runs[0]!.answers).toHaveLength(0);
  });

  it("send --task-id ID --task yes --stream answers it: the same run goes on and alpha sees the answer stream in", async () => {
    const r = await alpha("send", "--agent", "beta", "--task-id", taskId, "--task", "yes", "--stream");
    expect(r.code, r.stderr).toBe(0);
    // The streamed words, each once (the final answer repeats no text already shown).
    expect(r.stdout).toBe("Deployed 1.4.2 to production.\n");
    expect(r.stderr).toContain(`[beta] running terminal: ${DEPLOY.command}`);
    expect(r.stderr).toMatch(new RegExp(`task ${taskId} completed \\(peer 'beta'\\)`));

    const run = fake.runs[0]!;
    expect(run.answers.map((a) => a.choice)).toEqual(["once"]);
    expect(run.outcome).toBe("completed");
    expect(fake.runs).toHaveLength(1); // the same run went on; no second run was started
    expect(run.streamsOpened).toBe(1); // on the one events connection beta held through the approval
    expect(fake.requests.filter((q) => q.path.startsWith("/v1/")).every((q) => q.bearer === API_KEY)).toBe(true);

    const status = await alpha("status", "--agent", "beta", "--task-id", taskId, "--json");
    const task = JSON.parse(status.stdout);
    expect(task.artifacts.map((a: any) => a.parts[0].text)).toEqual(["Deployed 1.4.2 to production."]);
  });

  it("send --task-id ID --task no --wait ends with the task's outcome (exit 0), not the question it answered", async () => {
    const asked = await alpha("send", "--agent", "beta", "--task", "deploy 1.4.2 again", "--wait");
    expect(asked.code, asked.stderr).toBe(6);
    const id = /^task (\S+) input-required \(peer 'beta'\)/m.exec(asked.stderr)![1]!;
    const r = await alpha("send", "--agent", "beta", "--task-id", id, "--task", "no", "--wait");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("Not deployed.\n");
    expect(r.stderr).toBe(`task ${id} accepted by peer 'beta'\ntask ${id} completed (peer 'beta')\n`);
    const run = fake.runs.find((x) => x.request.userMessage === "deploy 1.4.2 again")!;
    expect(run.answers.map((a) => a.choice)).toEqual(["deny"]);
  });

  it("a completed task takes no further answer (-32004), and Hermes hears nothing more", async () => {
    const r = await alpha("send", "--agent", "beta", "--task-id", taskId, "--task", "yes again", "--wait", "--json");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/-32004/);
    expect(r.stderr).toContain("TASK_STATE_COMPLETED");
    expect(fake.runs[0]!.answers).toHaveLength(1);
  });
});
