/**
 * The terminal client as a person meets it: the compiled binary, real nodes, and (for what only a terminal
 * shows) a real pseudo-terminal. Progress lines on a terminal and plain output in pipes, Ctrl-C, a peer that
 * dies mid-wait, following a task up, discovering and pinning a peer, and serve's start-up errors.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { createServer as createTlsServer, type Server as TlsServer } from "node:tls";
import { join } from "node:path";
import { BINARY, runBinary, serveBinary, type CliRun, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { startGatedModel, type GatedModel } from "../fakes/gated-model";
import { runInPty } from "../helpers/pty";

let fleet: Fleet;
let model: GatedModel;
let beta: ServedBinary;
const served: ServedBinary[] = [];
const alpha = (...args: string[]): Promise<CliRun> => runBinary(["--home", fleet.homes.alpha!, ...args]);
const alphaArgs = (...args: string[]) => ["--home", fleet.homes.alpha!, ...args];
const ESC = "\x1b[";

async function serveBeta(): Promise<ServedBinary> {
  const node = await serveBinary(fleet.homes.beta!, ["--executor", "openai", "--model-url", model.url]);
  served.push(node);
  const added = await alpha("peers", "add", "beta", node.url, "--replace");
  expect(added.code, added.stderr).toBe(0);
  return node;
}

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta", "gamma"]);
  model = startGatedModel({ holdAfterChunks: 1 });
  beta = await serveBeta();
});
afterAll(async () => {
  await Promise.all(served.map((n) => n.stop("SIGKILL").catch(() => undefined)));
  model?.stop();
  fleet?.cleanup();
});

describe("send --wait on a terminal and in a pipe", () => {
  it("on a terminal: the task id at once, a progress line (state, time waited) redrawn in place, then the result", async () => {
    const pty = runInPty(alphaArgs("send", "--agent", "beta", "--task", "tty wait [hold]", "--wait"));
    const shown = await pty.waitFor(/peer 'beta' · working · \d+s/);
    expect(shown).toMatch(/^task [0-9A-Z]{26} accepted by peer 'beta'\r\n/);
    expect(shown).toContain(`\r${ESC}2K`); // drawn in place: return, erase line
    await model.arrival("tty wait");
    model.release("tty wait");
    expect(await pty.exited).toBe(0);
    const out = pty.output();
    // The line was erased before the result; the result and the status line are plain.
    expect(out).toMatch(
      new RegExp(`\\r\\x1b\\[2Kecho: tty wait \\[hold\\]\\r\\ntask [0-9A-Z]{26} completed \\(peer 'beta'\\)\\r\\n$`),
    );
  });

  it("in a pipe: the same run writes no escape sequence and no carriage return", async () => {
    const waiting = alpha("send", "--agent", "beta", "--task", "piped wait [hold]", "--wait");
    await model.arrival("piped wait");
    model.release("piped wait");
    const r = await waiting;
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("echo: piped wait [hold]\n");
    expect(r.stderr).toMatch(/^task ([0-9A-Z]{26}) accepted by peer 'beta'\ntask \1 completed \(peer 'beta'\)\n$/);
    expect(r.stderr + r.stdout).not.toContain("\r");
    expect(r.stderr + r.stdout).not.toContain(ESC);
  });

  it("--stream with stdout in a file and stderr on a terminal: the file holds exactly the answer", async () => {
    const file = join(fleet.root, "answer.txt");
    const pty = runInPty(
      alphaArgs("send", "--agent", "beta", "--task", "stream to file [hold] and more words", "--stream"),
      {},
      file,
    );
    await pty.waitFor(/peer 'beta' · working · \d+s/);
    await model.chunks("stream to file", 1);
    model.release("stream to file");
    expect(await pty.exited).toBe(0);
    expect(readFileSync(file, "utf8")).toBe("echo: stream to file [hold] and more words\n");
    expect(pty.output()).toMatch(/task [0-9A-Z]{26} completed \(peer 'beta'\)\r\n$/);
  });

  it("--stream into a pipe whose reader leaves (| head -c 5) ends quietly, exit 0, and stops following", async () => {
    // A real pipe to a process that exits: bash runs the pipeline and says on stderr when head is gone, and
    // with what status the binary ended.
    const script = '"$@" | { head -c 5 > /dev/null; echo "head gone" >&2; }; echo "send exited ${PIPESTATUS[0]}" >&2';
    const args = alphaArgs(
      "send",
      "--agent",
      "beta",
      "--task",
      "pipe closes [hold] and then many more words",
      "--stream",
    );
    const sh = Bun.spawn(["bash", "-c", script, "bash", BINARY, ...args], { stdout: "ignore", stderr: "pipe" });
    const decoder = new TextDecoder();
    let stderr = "";
    const reader = sh.stderr.getReader();
    const readUntil = async (text: string) => {
      while (!stderr.includes(text)) {
        const { value, done } = await reader.read();
        if (done) break;
        stderr += decoder.decode(value, { stream: true });
      }
    };
    await model.chunks("pipe closes", 1);
    await readUntil("head gone");
    // head has read its 5 bytes and exited; the next words go to a closed pipe.
    model.release("pipe closes");
    await readUntil("send exited");
    expect(await sh.exited).toBe(0);
    expect(stderr).toMatch(/^task [0-9A-Z]{26} accepted by peer 'beta'\n/);
    expect(stderr).toContain("send exited 0");
    expect(stderr).not.toMatch(/EPIPE|broken pipe|at .*:\d+/i);
  });

  it("--stream on a terminal shows the progress line before the first token, then the tokens", async () => {
    const pty = runInPty(alphaArgs("send", "--agent", "beta", "--task", "stream on tty [hold] rest", "--stream"));
    await pty.waitFor(/peer 'beta' · (submitted|working) · \d+s/);
    await model.chunks("stream on tty", 1);
    model.release("stream on tty");
    expect(await pty.exited).toBe(0);
    const out = pty.output();
    expect(out).toContain("echo: stream on tty [hold] rest\r\n");
    expect(out.indexOf("peer 'beta' · ")).toBeLessThan(out.indexOf("echo: "));
  });

  it("Ctrl-C stops waiting (exit 130) and says how to follow the task up; that command then gets its result", async () => {
    const pty = runInPty(alphaArgs("send", "--agent", "beta", "--task", "ctrl c [hold]", "--wait"));
    const id = /task ([0-9A-Z]{26}) accepted/.exec(await pty.waitFor(/· working ·/))![1]!;
    pty.type("\x03");
    expect(await pty.exited).toBe(130);
    const out = pty.output();
    expect(out).toContain(`a2a-node: stopped waiting; task ${id} goes on at peer 'beta' (working)`);
    expect(out).toContain(
      `next: follow it with 'a2a-node status --agent beta --task-id ${id} --wait', or cancel it with 'a2a-node cancel --agent beta --task-id ${id}'`,
    );
    expect(out).not.toContain("gave up");
    const following = alpha("status", "--agent", "beta", "--task-id", id, "--wait");
    await model.arrival("ctrl c");
    model.release("ctrl c");
    const r = await following;
    expect(r).toMatchObject({
      code: 0,
      stdout: "echo: ctrl c [hold]\n",
      stderr: `task ${id} completed (peer 'beta')\n`,
    });
  });

  it("a task canceled by another command while send --wait waits: exit 7", async () => {
    const waiting = alpha("send", "--agent", "beta", "--task", "to be canceled [hold]", "--wait");
    await model.arrival("to be canceled");
    const listed = JSON.parse((await alpha("tasks", "list", "--agent", "beta", "--state", "working", "--json")).stdout);
    const id = listed.tasks[0].task.id;
    const canceled = await alpha("cancel", "--agent", "beta", "--task-id", id);
    expect(canceled.code, canceled.stderr).toBe(0);
    const r = await waiting;
    expect(r.code).toBe(7);
    expect(r.stderr).toContain(`task ${id} canceled (peer 'beta')`);
  });
});

describe("a peer that goes away mid-wait", () => {
  it("send --wait exits 4 with the task id and the command to follow it once the peer is back; it then does", async () => {
    // On a terminal, so the test can see the task accepted before it kills the peer.
    const pty = runInPty(alphaArgs("send", "--agent", "beta", "--task", "survive a crash [hold]", "--wait"));
    const id = /task ([0-9A-Z]{26}) accepted/.exec(await pty.waitFor(/· working ·/))![1]!;
    await beta.stop("SIGKILL");
    expect(await pty.exited).toBe(4);
    const err = pty.output().replace(/\r\n/g, "\n");
    expect(err).toContain("connection refused");
    expect(err).toContain(`task ${id} was accepted (last seen working) and may go on there`);
    expect(err).toContain(
      `next: once the peer is back, follow it with 'a2a-node status --agent beta --task-id ${id} --wait'`,
    );
    // The restarted node runs the task again (a chat completion has no side effects); the follow-up sees it end.
    beta = await serveBeta();
    const following = alpha("status", "--agent", "beta", "--task-id", id, "--wait");
    // Its second request to the model (the rerun) is the one to let go.
    await model.arrivals("survive a crash", 2);
    model.release("survive a crash");
    const done = await following;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toBe("echo: survive a crash [hold]\n");
  });
});

describe("peers discover and ping", () => {
  it("without a terminal, discover shows the node and pins nothing unless --yes", async () => {
    const r = await alpha("peers", "discover", beta.url);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/^ {2}node {9}beta\n/);
    expect(r.stdout).toMatch(/key pin +spki:sha256:[A-Za-z0-9_-]{43}\n/);
    expect(r.stdout).toMatch(/fingerprint +([0-9A-F]{2}:){31}[0-9A-F]{2} \(this certificate; renewal replaces it\)\n/);
    expect(r.stdout).toContain("skills");
    expect(r.stderr).toContain("nothing pinned: standard input is not a terminal to confirm on");
    expect(r.stderr).toContain("then pass --yes");
    const pinned = await alpha("peers", "discover", beta.url, "--yes", "--json");
    expect(pinned.code, pinned.stderr).toBe(0);
    expect(pinned.stderr).toBe(""); // it shows the identity itself; no note on how to pin it
    const facts = JSON.parse(pinned.stdout);
    expect(facts).toMatchObject({ name: "beta", url: beta.url, pinned: true, changed: true, card: { name: "beta" } });
    const peers = JSON.parse((await alpha("peers", "list", "--json")).stdout);
    expect(peers.find((p: any) => p.name === "beta").keyPin).toBe(facts.certificate.keyPin);
    expect(facts.certificate.keyPin).toMatch(/^spki:sha256:/);
    // Pinned: sends still work, and a second discover has nothing to change.
    expect((await alpha("peers", "discover", beta.url, "--json")).code).toBe(0);
  });

  it("on a terminal, discover asks before pinning, and a 'y' pins", async () => {
    const gamma = await serveBinary(fleet.homes.gamma!, ["--executor", "echo"]);
    served.push(gamma);
    const pty = runInPty(alphaArgs("peers", "discover", gamma.url));
    await pty.waitFor(/pin 'gamma' at .* with key spki:sha256:\S+\? \[y\/N\] $/);
    pty.type("y\n");
    expect(await pty.exited).toBe(0);
    expect(pty.output()).toContain(`pinned peer gamma at ${gamma.url}`);
    const ping = await alpha("peers", "ping", "gamma", "--json");
    expect(ping.code, ping.stderr).toBe(0);
    expect(JSON.parse(ping.stdout)).toMatchObject({
      peer: "gamma",
      name: "gamma",
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      protocolVersions: ["1.0"],
      ms: expect.any(Number),
    });
    const text = await alpha("peers", "ping", "gamma");
    expect(text.stdout).toMatch(
      /^peer 'gamma' \(https:\/\/127\.0\.0\.1:\d+\) answered in [\d.]+ ms .*'gamma' runs version \d+\.\d+\.\d+, A2A 1\.0\n$/,
    );
  });

  it("peers add --pin checks the name on the certificate before pinning", async () => {
    const wrong = await alpha("peers", "add", "delta", beta.url, "--pin");
    expect(wrong.code).toBe(8);
    expect(wrong.stderr).toContain(
      `the node at ${beta.url} is fleet node 'beta', not 'delta' (the name its fleet certificate carries)`,
    );
    expect(wrong.stderr).toContain(`add it under its own name ('a2a-node peers add beta ${beta.url} --pin')`);
    const right = await alpha("peers", "add", "beta", beta.url, "--pin", "--replace");
    expect(right.code, right.stderr).toBe(0);
    expect(right.stdout).toMatch(
      /^added peer beta at https:\/\/127\.0\.0\.1:\d+ \(key pinned spki:sha256:[A-Za-z0-9_-]{43}\)\n$/,
    );
  });
});

describe("a peer that takes the connection and then stays silent", () => {
  // What a hung process, a port forwarded to nothing or a wrong service looks like: TCP accepted, then nothing.
  let silent: Server;
  let silentUrl: string;
  // A fleet member's TLS server that finishes the handshake and then never answers a request (a stuck node).
  let stuck: TlsServer;
  let stuckUrl: string;
  const held: Socket[] = [];
  const quick = ["--peer-connect-timeout", "2", "--peer-handshake-timeout", "1", "--peer-answer-timeout", "1"];
  beforeAll(async () => {
    silent = createServer((socket) => void held.push(socket));
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", () => r()));
    silentUrl = `https://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const gamma = fleet.identity("gamma");
    stuck = createTlsServer(
      { cert: gamma.cert, key: gamma.key, ca: gamma.ca, requestCert: true, rejectUnauthorized: true },
      (socket) => void held.push(socket),
    );
    await new Promise<void>((r) => stuck.listen(0, "127.0.0.1", () => r()));
    stuckUrl = `https://127.0.0.1:${(stuck.address() as AddressInfo).port}`;
    expect((await alpha("peers", "add", "hung", silentUrl)).code).toBe(0);
  });
  afterAll(() => {
    for (const s of held) s.destroy();
    silent?.close();
    stuck?.close();
  });
  const handshake = (url: string) =>
    new RegExp(
      `${url.replace(/[.]/g, "\\.")} accepted the connection but did not finish a TLS handshake within 1 s: something there accepts connections and stays silent \\(not an a2a-node port\\?\\), or the node is overloaded\n  next: check the port: .*--peer-handshake-timeout S`,
    );

  it.each([
    ["send", ["send", "--agent", "URL", "--task", "anyone there?"]],
    ["send --stream", ["send", "--agent", "URL", "--task", "anyone there?", "--stream"]],
    ["status", ["status", "--agent", "URL", "--task-id", "01J00000000000000000000000"]],
    ["tasks list", ["tasks", "list", "--agent", "URL"]],
    ["cancel", ["cancel", "--agent", "URL", "--task-id", "01J00000000000000000000000"]],
    ["peers ping", ["peers", "ping", "URL"]],
    ["peers discover", ["peers", "discover", "URL", "--yes"]],
    ["peers add --pin", ["peers", "add", "quiet", "URL", "--pin"]],
  ])("%s gives up after the handshake timeout, says so and what to check (exit 4)", async (_name, args) => {
    const r = await alpha(...args.map((a) => (a === "URL" ? silentUrl : a)), ...quick);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toMatch(handshake(silentUrl));
  });

  it("with the defaults (no flag, no setting), send gives up after the 10 s handshake timeout instead of waiting forever", async () => {
    const r = await alpha("send", "--agent", silentUrl, "--task", "anyone there?");
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain(`${silentUrl} accepted the connection but did not finish a TLS handshake within 10 s`);
  });

  it("a registered peer is named, the config file's setting applies, and the flag wins over it", async () => {
    writeFileSync(join(fleet.homes.alpha!, "config.toml"), "peer_handshake_timeout_seconds = 1\n");
    try {
      const byConfig = await alpha("peers", "ping", "hung");
      expect(byConfig.code).toBe(4);
      expect(byConfig.stderr).toMatch(
        /^a2a-node: peer 'hung' at https:\/\/127\.0\.0\.1:\d+ accepted the connection but did not finish a TLS handshake within 1 s/,
      );
      const byFlag = await alpha("peers", "ping", "hung", "--peer-handshake-timeout", "2");
      expect(byFlag.stderr).toContain("did not finish a TLS handshake within 2 s");
      const byEnv = await runBinary(alphaArgs("peers", "ping", "hung"), {
        A2A_NODE_PEER_HANDSHAKE_TIMEOUT_SECONDS: "1.5",
      });
      expect(byEnv.stderr).toContain("did not finish a TLS handshake within 1.5 s");
    } finally {
      writeFileSync(join(fleet.homes.alpha!, "config.toml"), "");
    }
    const bad = await alpha("peers", "ping", "hung", "--peer-answer-timeout", "0");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      "a2a-node: --peer-answer-timeout must be 0.1-3600 seconds (got 0)\nsee 'a2a-node peers ping --help'\n",
    );
  });

  it("join and pki renew (from a ca_peer) are bounded too", async () => {
    const fresh = join(fleet.root, "joiner");
    const joined = await runBinary([
      "--home",
      fresh,
      "join",
      silentUrl,
      "--token",
      `joiner.${"x".repeat(43)}`,
      "--ca-fingerprint",
      `sha256:${"0".repeat(64)}`,
      ...quick,
    ]);
    expect(joined.code).toBe(4);
    expect(joined.stderr).toMatch(handshake(silentUrl));
    const beta = (...args: string[]) => runBinary(["--home", fleet.homes.beta!, ...args]);
    expect((await beta("peers", "add", "hung", silentUrl, "--replace")).code).toBe(0);
    const renewed = await beta("pki", "renew", "--ca-peer", "hung", ...quick);
    expect(renewed.code).toBe(4);
    expect(renewed.stderr).toContain("accepted the connection but did not finish a TLS handshake within 1 s");
  });

  it("a fleet member that finishes the handshake and then never answers: the answer timeout, exit 5", async () => {
    const r = await alpha("send", "--agent", stuckUrl, "--task", "are you stuck?", ...quick);
    expect(r.code, r.stderr).toBe(5);
    expect(r.stderr).toMatch(
      new RegExp(
        `^a2a-node: ${stuckUrl.replace(/[.]/g, "\\.")} did not answer within 1 s: the node is overloaded or stuck\n  next: see that node's log and /health/ready; .*--peer-answer-timeout S`,
      ),
    );
    const ping = await alpha("peers", "ping", stuckUrl, ...quick);
    expect(ping.code).toBe(5);
  });
});

describe("the environment of another machine", () => {
  it("NODE_EXTRA_CA_CERTS naming a file this machine lacks (no ca-certificates) adds no runtime warning to a command's output", async () => {
    const env = { NODE_EXTRA_CA_CERTS: join(fleet.root, "no-such-ca-certificates.crt") };
    const ping = await runBinary(alphaArgs("peers", "ping", "beta"), env);
    expect(ping.code, ping.stderr).toBe(0);
    expect(ping.stderr).toBe("");
    const sent = await runBinary(alphaArgs("send", "--agent", "beta", "--task", "no warning", "--json"), env);
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stderr).toBe("");
  });
});

describe("serve's start-up errors", () => {
  it("--host on an address this machine lacks names the machine's addresses", async () => {
    const r = await runBinary([
      "--home",
      fleet.homes.alpha!,
      "serve",
      "--host",
      "203.0.113.77",
      "--port",
      "0",
      "--executor",
      "echo",
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("cannot listen on 203.0.113.77: it is not an address of this machine");
    expect(r.stderr).toMatch(
      /next: pass --host with one of its addresses \(127\.0\.0\.1, .*\), or --host 0\.0\.0\.0 for all of them/,
    );
    expect(r.stderr).not.toContain("unexpected error");
  });

  it("a port in use is named, with --port as the way out", async () => {
    const taken = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
    try {
      const r = await runBinary([
        "--home",
        fleet.homes.alpha!,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        String(taken.port),
        "--executor",
        "echo",
      ]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`port ${taken.port} on 127.0.0.1 is already in use by another process`);
      expect(r.stderr).toContain(`pass another --port (e.g. --port ${Number(taken.port) + 1})`);
    } finally {
      taken.stop(true);
    }
  });
});
