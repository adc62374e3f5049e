/**
 * The daemon's life on a home, with the compiled binary: one serve per home (a second refuses, naming the
 * first's PID), and a lock left by a killed daemon does not keep the home locked; SIGHUP reloads (a new
 * certificate on disk is used for new connections while a task in flight carries on) instead of ending it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { connect } from "node:tls";
import { X509Certificate } from "node:crypto";
import { homePaths } from "../../src/home";
import { verifyFleetCard } from "../../src/client/card-trust";
import { readSignatureHeader } from "../../src/protocol/card-signature";
import type { AgentCard } from "../../src/protocol/types";
import { issueBundle, readBundle } from "../../pki";
import { startGatedModel } from "../fakes/gated-model";
import { join } from "node:path";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { runBinary, serveBinary, type ServedBinary } from "../helpers/binary";
import { get, rpc, userMessage } from "../helpers/rpc";

let fleet: Fleet;
const running: ServedBinary[] = [];

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta", "gamma"]);
});
afterAll(async () => {
  for (const n of running.splice(0)) await n.stop("SIGKILL");
  fleet.cleanup();
});

describe("one serve per home", () => {
  it("a second serve on the same home refuses, naming the first's PID and what to do", async () => {
    const first = await serveBinary(fleet.homes.alpha, ["--executor", "echo"]);
    running.push(first);
    expect(readFileSync(join(fleet.homes.alpha, "serve.pid"), "utf8").trim()).toBe(String(first.pid));
    const second = await runBinary([
      "--home",
      fleet.homes.alpha,
      "serve",
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--executor",
      "echo",
    ]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`another a2a-node serve (PID ${first.pid}) is already running on this home`);
    expect(second.stderr).toContain(`kill ${first.pid}`);
    // The first is untouched and still answers.
    expect((await get(`${first.url}/health`, fleet.identity("alpha"))).status).toBe(200);
    expect(await first.stop()).toBe(0);
    running.splice(running.indexOf(first), 1);
    expect(existsSync(join(fleet.homes.alpha, "serve.pid"))).toBe(false);
  });

  it("a daemon killed with SIGKILL leaves a stale lock that the next start takes over", async () => {
    const killed = await serveBinary(fleet.homes.beta, ["--executor", "echo"]);
    await killed.stop("SIGKILL");
    expect(readFileSync(join(fleet.homes.beta, "serve.pid"), "utf8").trim()).toBe(String(killed.pid));
    const next = await serveBinary(fleet.homes.beta, ["--executor", "echo"]);
    running.push(next);
    expect(readFileSync(join(fleet.homes.beta, "serve.pid"), "utf8").trim()).toBe(String(next.pid));
  });

  it("a lock naming a live process that is not a2a-node serve (a reused PID) is taken over", async () => {
    const home = fleet.homes.alpha;
    writeFileSync(join(home, "serve.pid"), `${process.pid}\n`); // this test runner: alive, but not `serve`
    const node = await serveBinary(home, ["--executor", "echo"]);
    running.push(node);
    expect(readFileSync(join(home, "serve.pid"), "utf8").trim()).toBe(String(node.pid));
  });
});

/** The fingerprint of the certificate a fresh connection to `url` is served. */
function servedFingerprint(url: string): Promise<string> {
  const u = new URL(url);
  const me = fleet.identity("alpha");
  return new Promise((resolve, reject) => {
    const socket = connect(
      { host: u.hostname, port: Number(u.port), ca: me.ca, cert: me.cert, key: me.key, servername: "localhost" },
      () => {
        resolve(socket.getPeerCertificate().fingerprint256);
        socket.end();
      },
    );
    socket.on("error", reject);
  });
}

describe("SIGHUP", () => {
  it("reloads: a certificate replaced on disk serves new connections, a task in flight completes, and the node stays up", async () => {
    const model = startGatedModel();
    const home = fleet.homes.gamma;
    writeFileSync(join(home, "config.toml"), 'log_level = "info"\n');
    const node = await serveBinary(home, ["--executor", "openai", "--model-url", model.url]);
    running.push(node);
    const before = await servedFingerprint(node.url);
    const signer = async () => {
      const card = (await get(`${node.url}/.well-known/agent-card.json`, fleet.identity("alpha"))).body as AgentCard;
      return {
        x5c: readSignatureHeader(card.signatures![0])?.x5c?.[0],
        verified: await verifyFleetCard(card, { ca: fleet.identity("alpha").ca, name: "gamma" }),
      };
    };
    const cardBefore = await signer();
    expect(cardBefore.x5c).toBe(
      new X509Certificate(readFileSync(homePaths(home).nodeCert, "utf8")).raw.toString("base64"),
    );

    const text = `[hold] ${crypto.randomUUID()}`;
    const inFlight = rpc(node.url, fleet.identity("alpha"), "SendMessage", { message: userMessage(text) });
    await model.arrival(text);

    // A renewed certificate for the same name, written over the old one (as `pki` tooling or an operator would).
    const bundlePath = join(fleet.root, "gamma-renewed.bundle");
    await issueBundle(homePaths(fleet.homes.alpha), { name: "gamma", out: bundlePath, replace: true });
    const renewed = await readBundle(bundlePath);
    writeFileSync(homePaths(home).nodeCert, renewed.cert);
    writeFileSync(homePaths(home).nodeKey, renewed.key, { mode: 0o600 });
    writeFileSync(join(home, "config.toml"), 'log_level = "info"\nmax_concurrent = 9\n');

    node.signal("SIGHUP");
    await node.waitForLine({
      msg: "these changes take effect only after a restart",
      level: "warn",
      settings: "max_concurrent",
    });
    expect(node.lines().filter((l) => l.msg === "reloaded")).toContainEqual(
      expect.objectContaining({ level: "info", applied: "certificate" }),
    );
    const after = await servedFingerprint(node.url);
    expect(after).not.toBe(before);
    expect(after).toBe(new (await import("node:crypto")).X509Certificate(renewed.cert).fingerprint256);
    // The card is signed again, by the new key and certificate.
    const cardAfter = await signer();
    expect(cardAfter.x5c).toBe(new X509Certificate(renewed.cert).raw.toString("base64"));
    expect(cardAfter.verified.keyPin).not.toBe(cardBefore.verified.keyPin);

    model.release();
    const reply = await inFlight;
    expect(reply.body.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    model.stop();
  });

  it("a config file that no longer parses is reported and the running configuration kept", async () => {
    const home = fleet.homes.gamma;
    const node = running.find((n) => n.log().includes("gamma")) ?? (await serveBinary(home, ["--executor", "echo"]));
    writeFileSync(join(home, "config.toml"), "port = = 1\n");
    node.signal("SIGHUP");
    const refused = await node.waitForLine({ msg: "reload refused; the running configuration stays", level: "error" });
    expect(refused.reason).toContain("is not valid TOML");
    expect((await get(`${node.url}/health`, fleet.identity("alpha"))).status).toBe(200);
  });
});

describe("a2a-node reload (the unit's ExecReload) and HOME/serve.json", () => {
  it("signals the home's serve and waits for its outcome: applied, needs a restart, refused; serve.json says how the node runs and goes when it stops", async () => {
    const home = join(fleet.root, "reload-delta");
    expect((await runBinary(["--home", home, "init-pki", "--name", "delta"])).code).toBe(0);
    writeFileSync(join(home, "config.toml"), "rate_limit_per_second = 100\n");
    const node = await serveBinary(home, ["--executor", "echo", "--admin-port", "0"]);
    running.push(node);
    const state = JSON.parse(readFileSync(join(home, "serve.json"), "utf8"));
    expect(state).toMatchObject({
      pid: node.pid,
      name: "delta",
      executor: "echo",
      urls: { mtls: node.url },
      database: { kind: "sqlite", where: join(home, "a2a-node.db") },
    });
    expect(state.urls.admin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(state.fromFlags.sort()).toEqual(["admin_port", "executor", "host", "port"]);
    expect(statSync(join(home, "serve.json")).mode & 0o777).toBe(0o600);

    writeFileSync(join(home, "config.toml"), "rate_limit_per_second = 50\nmax_concurrent = 9\n");
    const applied = await runBinary(["--home", home, "reload"]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toBe(`reloaded a2a-node serve (PID ${node.pid}): applied rate_limit_per_second\n`);
    expect(applied.stderr).toBe(
      "warning: these changes take effect only after a restart: max_concurrent (systemctl restart a2a-node)\n",
    );

    writeFileSync(join(home, "config.toml"), "port = = 1\n");
    const refused = await runBinary(["--home", home, "reload", "--pid", String(node.pid), "--json"]);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({
      pid: node.pid,
      outcome: "refused",
      reason: expect.stringContaining("is not valid TOML"),
    });
    expect((await fetch(`${state.urls.admin}/health/live`)).status).toBe(200); // still serving
    const said = await runBinary(["--home", home, "reload"]);
    expect(said.code).toBe(1);
    expect(said.stderr).toMatch(
      /^a2a-node: a2a-node serve \(PID \d+\) refused the new configuration and keeps running on the old one: config file .* is not valid TOML/,
    );

    writeFileSync(join(home, "config.toml"), "");
    // Not a serve: never signalled.
    const other = await runBinary(["--home", home, "reload", "--pid", String(process.pid)]);
    expect(other.code).toBe(3);
    expect(other.stderr).toContain(`process ${process.pid} is not an a2a-node serve`);

    expect(await node.stop()).toBe(0);
    expect(existsSync(join(home, "serve.json"))).toBe(false);
    const none = await runBinary(["--home", home, "reload"]);
    expect(none.code).toBe(3);
    expect(none.stderr).toContain(`no a2a-node serve is running on ${home}`);
  });
});

describe("npm start", () => {
  it("kill of the npm process stops the node it started (signals reach the node), leaving nothing serving", async () => {
    const home = join(fleet.root, "npm-start-home");
    const npm = Bun.spawn(["npm", "start", "--", "--executor", "echo", "--host", "127.0.0.1", "--port", "0"], {
      cwd: join(import.meta.dirname, "..", ".."),
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", A2A_NODE_HOME: home },
      stdout: "pipe",
      stderr: "pipe",
    });
    let output = "";
    const decoder = new TextDecoder();
    let listening!: () => void;
    const served = new Promise<void>((r) => (listening = r));
    // Both streams end only when every process holding them (npm, the start script, the node) has exited.
    const drain = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
        output += decoder.decode(chunk, { stream: true });
        if (output.includes("serving A2A over mTLS")) listening();
      }
    };
    const closed = Promise.all([drain(npm.stdout), drain(npm.stderr)]);
    await served;
    const nodePid = Number(readFileSync(join(home, "serve.pid"), "utf8"));
    expect(nodePid).not.toBe(npm.pid);
    npm.kill("SIGTERM");
    const code = await npm.exited;
    await closed;
    output += `\nNPM EXIT ${code} ${npm.signalCode}`;
    // Its stdout is a pipe: the log is JSON lines.
    expect(output, output).toContain('"msg":"stopping","signal":"SIGTERM"');
    expect(output).toContain('"msg":"stopped","name":');
    expect(existsSync(join(home, "serve.pid"))).toBe(false);
  });
});
