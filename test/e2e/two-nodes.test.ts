/**
 * Two compiled-binary nodes on loopback, each with its own home, driven only through the binary's CLI:
 * PKI set-up, serve, peers, send, status, graceful stop and restart. The only fake is the model.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { runBinary, serveBinary, type CliRun, type ServedBinary } from "../helpers/binary";
import { startFakeModel, type FakeModel } from "../fakes/openai";
import { tempDir } from "../helpers/temp-dir";

const root = tempDir("a2a-e2e-two-");
const alphaHome = join(root, "alpha");
const betaHome = join(root, "beta");
const served: ServedBinary[] = [];
const models: FakeModel[] = [];

/** `a2a-node --home HOME ...args` */
const cli = (home: string, ...args: string[]): Promise<CliRun> => runBinary(["--home", home, ...args]);
const alpha = (...args: string[]) => cli(alphaHome, ...args);

async function serve(home: string, args: string[]): Promise<ServedBinary> {
  const node = await serveBinary(home, args);
  served.push(node);
  return node;
}

/** Points alpha's peer `beta` at a (re)started beta. */
async function pointBetaAt(node: ServedBinary) {
  const r = await alpha("peers", "add", "beta", node.url, "--replace");
  expect(r.code, r.stderr).toBe(0);
}

/** An address where nothing listens: a port the OS gave us, then closed again. */
function deadPort(): number {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = s.port as number;
  s.stop(true);
  return port;
}

function onlyJsonLine(r: CliRun): any {
  const lines = r.stdout.split("\n").filter((l) => l !== "");
  expect(lines, r.stdout).toHaveLength(1);
  expect(r.stdout.endsWith("\n")).toBe(true);
  return JSON.parse(lines[0]);
}

let alphaNode: ServedBinary;
let betaNode: ServedBinary;

beforeAll(async () => {
  const init = await alpha("init-pki", "--name", "alpha");
  expect(init.code, init.stderr).toBe(0);
  const bundle = join(root, "beta.bundle");
  const issued = await alpha("pki", "issue", "beta", "--out", bundle);
  expect(issued.code, issued.stderr).toBe(0);
  const installed = await cli(betaHome, "init-pki", "--bundle", bundle);
  expect(installed.code, installed.stderr).toBe(0);
  expect(installed.stdout).toContain('node "beta"');

  [alphaNode, betaNode] = await Promise.all([
    serve(alphaHome, ["--executor", "echo"]),
    serve(betaHome, ["--executor", "echo"]),
  ]);
  const added = await alpha("peers", "add", "beta", betaNode.url);
  expect(added.code, added.stderr).toBe(0);
});

afterAll(async () => {
  await Promise.all(served.map((n) => n.stop("SIGKILL").catch(() => undefined)));
  for (const m of models) m.stop();
});

describe("two nodes over mutual TLS, through the CLI", () => {
  const text = `please echo this: ${crypto.randomUUID()}`;
  let waited: any;

  it("send --wait --json prints the bare completed Task on one line", async () => {
    const r = await alpha("send", "--agent", "beta", "--task", text, "--wait", "--json");
    expect(r.code, r.stderr).toBe(0);
    waited = onlyJsonLine(r);
    expect(waited.id).toEqual(expect.any(String));
    expect(waited.contextId).toEqual(expect.any(String));
    expect(waited.status.state).toBe("TASK_STATE_COMPLETED");
    expect(waited.artifacts[0].parts[0].text).toBe(text);
    // The bare Task, not a JSON-RPC envelope or a {task} wrapper.
    expect(waited).not.toHaveProperty("jsonrpc");
    expect(waited).not.toHaveProperty("task");
    expect(waited).not.toHaveProperty("result");
  });

  it("status --json agrees with what send returned", async () => {
    const r = await alpha("status", "--agent", "beta", "--task-id", waited.id, "--json");
    expect(r.code, r.stderr).toBe(0);
    const task = onlyJsonLine(r);
    expect(task.id).toBe(waited.id);
    expect(task.contextId).toBe(waited.contextId);
    expect(task.status.state).toBe(waited.status.state);
    expect(task.artifacts).toEqual(waited.artifacts);
  });

  it("send without --wait prints ID<TAB>STATE, and status knows that id", async () => {
    const r = await alpha("send", "--agent", "beta", "--task", "fire and forget");
    expect(r.code, r.stderr).toBe(0);
    const m = /^(\S+)\t(submitted|working|completed)\n$/.exec(r.stdout);
    expect(m, JSON.stringify(r.stdout)).not.toBeNull();
    const id = m![1];
    const s = await alpha("status", "--agent", "beta", "--task-id", id, "--json");
    expect(s.code, s.stderr).toBe(0);
    const task = onlyJsonLine(s);
    expect(task.id).toBe(id);
    expect(["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]).toContain(task.status.state);
  });

  it("status of an unknown task id exits 3 with a one-line reason", async () => {
    const r = await alpha("status", "--agent", "beta", "--task-id", "01NOSUCHTASK0000000000000");
    expect(r.code).toBe(3);
    expect(r.stdout).toBe("");
    const lines = r.stderr.split("\n").filter((l) => l !== "");
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/not found/i);
    expect(lines[0]).toContain("01NOSUCHTASK0000000000000");
  });

  it("send to an unknown peer name exits 3 with a next-step hint", async () => {
    const r = await alpha("send", "--agent", "nosuchpeer", "--task", "hello");
    expect(r.code).toBe(3);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("nosuchpeer");
    expect(r.stderr).toMatch(/\n\s*next: .+/);
  });

  it("refuses (exit 8) a peer whose URL serves another node's certificate", async () => {
    // "gamma" is registered at alpha's own server: the certificate there says CN=alpha.
    const added = await alpha("peers", "add", "gamma", alphaNode.url);
    expect(added.code, added.stderr).toBe(0);
    const r = await alpha("send", "--agent", "gamma", "--task", "hello", "--wait");
    expect(r.code).toBe(8);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("'alpha'");
    expect(r.stderr).toContain("'gamma'");
    expect(r.stderr).toMatch(/next: /);
  });

  it("a peer with nothing listening gives exit 4, connection refused", async () => {
    const added = await alpha("peers", "add", "stopped", `https://127.0.0.1:${deadPort()}`);
    expect(added.code, added.stderr).toBe(0);
    const r = await alpha("send", "--agent", "stopped", "--task", "hello");
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/connection refused/i);
    expect(r.stderr).toMatch(/next: /);
  });

  it("SIGTERM stops serve with exit code 0, after which beta is refused-unreachable (exit 4)", async () => {
    const code = await betaNode.stop("SIGTERM");
    expect(code).toBe(0);
    expect(betaNode.lines().at(-1)).toMatchObject({ level: "info", msg: "stopped", name: "beta" });
    const r = await alpha("send", "--agent", "beta", "--task", "anyone there?");
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/connection refused/i);
  });

  it("a node restarted on the same home still answers status for a task sent before the restart", async () => {
    betaNode = await serve(betaHome, ["--executor", "echo"]);
    await pointBetaAt(betaNode);
    const r = await alpha("status", "--agent", "beta", "--task-id", waited.id, "--json");
    expect(r.code, r.stderr).toBe(0);
    const task = onlyJsonLine(r);
    expect(task.id).toBe(waited.id);
    expect(task.contextId).toBe(waited.contextId);
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(task.artifacts).toEqual(waited.artifacts);
    expect(await betaNode.stop("SIGTERM")).toBe(0);
  });

  it("with --executor openai, the artifact is the model's answer to the sent text", async () => {
    const model = startFakeModel({ reply: (messages) => `MODEL SAYS: ${messages.at(-1)?.content.toUpperCase()}` });
    models.push(model);
    betaNode = await serve(betaHome, ["--executor", "openai", "--model-url", model.url, "--model", "test-model"]);
    await pointBetaAt(betaNode);
    const prompt = `summarise ${crypto.randomUUID()}`;
    const r = await alpha("send", "--agent", "beta", "--task", prompt, "--wait", "--json");
    expect(r.code, r.stderr).toBe(0);
    const task = onlyJsonLine(r);
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(task.artifacts[0].parts[0].text).toBe(`MODEL SAYS: ${prompt.toUpperCase()}`);

    expect(model.requests).toHaveLength(1);
    const body = model.requests[0].body;
    expect(body.model).toBe("test-model");
    expect(body.messages).toContainEqual({ role: "user", content: prompt });
    expect(await betaNode.stop("SIGTERM")).toBe(0);
  });

  it("with the model URL at a dead port, the task ends FAILED naming that URL, and send --wait exits 1", async () => {
    const modelUrl = `http://127.0.0.1:${deadPort()}/v1`;
    betaNode = await serve(betaHome, ["--executor", "openai", "--model-url", modelUrl]);
    await pointBetaAt(betaNode);
    const r = await alpha("send", "--agent", "beta", "--task", "this will not be answered", "--wait", "--json");
    expect(r.code).toBe(1);
    const task = onlyJsonLine(r);
    expect(task.status.state).toBe("TASK_STATE_FAILED");
    const reason = task.status.message.parts.map((p: { text?: string }) => p.text ?? "").join("\n");
    expect(reason).toContain(modelUrl);

    // Without --json the reason reaches the person on stderr.
    const plain = await alpha("send", "--agent", "beta", "--task", "and again", "--wait");
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/failed/);
    expect(plain.stderr).toContain(modelUrl);
  });
});
