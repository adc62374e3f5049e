/**
 * `send` and `status` pick the binding a peer's card lists first: JSON-RPC for a node with the default
 * preferred_binding, HTTP+JSON for one configured to prefer it, with the same behaviour either way.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openClientSession } from "../../src/cli/client-session";
import { bufferIo } from "../../src/cli/io";
import { runCli } from "../../src/cli/registry";
import { DEFAULTS } from "../../src/config";
import { createLogger } from "../../src/log";
import { startNode, type RunningNode } from "../../src/node";
import { startFakeModel, type FakeModel } from "../fakes/openai";
import { makeFleet, type Fleet } from "../helpers/fleet";

let fleet: Fleet;
let restful: RunningNode;
let plain: RunningNode;
let model: FakeModel;
const quiet = createLogger(() => {}, "warn");

async function cli(...args: string[]) {
  const io = bufferIo();
  const code = await runCli(["--home", fleet.homes.alpha, ...args], io);
  return { code, out: io.out(), err: io.err() };
}

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta", "gamma"]);
  model = startFakeModel({ reply: () => "one two three" });
  restful = await startNode(
    fleet.homes.beta,
    { ...DEFAULTS, host: "127.0.0.1", port: 0, executor: "openai", modelUrl: model.url, preferredBinding: "HTTP+JSON" },
    quiet,
  );
  plain = await startNode(fleet.homes.gamma, { ...DEFAULTS, host: "127.0.0.1", port: 0, executor: "echo" }, quiet);
  expect((await cli("peers", "add", "beta", restful.url)).code).toBe(0);
  expect((await cli("peers", "add", "gamma", plain.url)).code).toBe(0);
});
afterAll(async () => {
  await restful?.stop();
  await plain?.stop();
  model?.stop();
  fleet?.cleanup();
});

describe("send and status to a node that prefers HTTP+JSON", () => {
  it("choose the binding the card lists first", async () => {
    expect((await openClientSession(fleet.homes.alpha, "beta")).client.binding).toBe("HTTP+JSON");
    expect((await openClientSession(fleet.homes.alpha, "gamma")).client.binding).toBe("JSONRPC");
    expect((await openClientSession(fleet.homes.alpha, restful.url)).client.binding).toBe("HTTP+JSON");
  });

  it("send --wait, send --stream and status work over it as over JSON-RPC", async () => {
    const waited = await cli("send", "--agent", "beta", "--task", "hello", "--wait", "--json");
    expect(waited.code, waited.err).toBe(0);
    const task = JSON.parse(waited.out);
    expect(task).toMatchObject({
      status: { state: "TASK_STATE_COMPLETED" },
      artifacts: [{ parts: [{ text: "one two three" }] }],
    });

    const streamed = await cli("send", "--agent", "beta", "--task", "talk", "--stream");
    expect(streamed.code, streamed.err).toBe(0);
    expect(streamed.out).toBe("one two three\n");
    expect(streamed.err).toMatch(/^task [0-9A-Z]{26} completed \(peer 'beta'\)$/m);

    const status = await cli("status", "--agent", "beta", "--task-id", task.id);
    expect(status.code, status.err).toBe(0);
    expect(status.out).toBe(`task ${task.id} completed (peer 'beta')\none two three\n`);
  });

  it("an unknown task is exit 3 with the node's own words, as over JSON-RPC", async () => {
    for (const peer of ["beta", "gamma"]) {
      const r = await cli("status", "--agent", peer, "--task-id", "01NOSUCHTASK0000000000000");
      expect(r.code, `${peer}: ${r.err}`).toBe(3);
      expect(r.err).toContain(`peer '${peer}' answered error -32001: Task not found: 01NOSUCHTASK0000000000000`);
    }
  });
});
