/**
 * `a2a-node doctor` on real homes: certificates from our PKI (expired ones made with past dates), real file
 * modes, a real database, peers served by the compiled binary over mutual TLS, closed ports, and the fake
 * model server as the model endpoint.
 */
import { chmodSync, copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initPki, installBundle, issueBundle } from "../../pki";
import { bufferIo } from "../../src/cli/io";
import { runCli } from "../../src/cli/registry";
import type { Finding } from "../../src/doctor/check";
import { ensureHome, homePaths } from "../../src/home";
import { requireBinary, serveBinary, type ServedBinary } from "../helpers/binary";
import { startFakeModel, type FakeModel } from "../fakes/openai";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { tempDir } from "../helpers/temp-dir";

let tmp: string;
let fleet: Fleet;
let other: Fleet;
let beta: ServedBinary;
let gamma: ServedBinary;
let model: FakeModel;
let closedPort: number;

/** A port nothing listens on: bound, then released. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  tmp = tempDir("a2a-doctor-");
  fleet = await makeFleet(["alpha", "beta", "gamma"]);
  other = await makeFleet(["stranger"]);
  beta = await serveBinary(fleet.homes.beta, ["--executor", "echo"]);
  gamma = await serveBinary(fleet.homes.gamma, ["--executor", "echo"]);
  model = startFakeModel();
  closedPort = await freePort();
});
afterAll(async () => {
  await beta?.stop();
  await gamma?.stop();
  model?.stop();
  fleet.cleanup();
  other.cleanup();
});

async function doctor(home: string, ...args: string[]) {
  const io = bufferIo({});
  const code = await runCli(["--home", home, "doctor", ...args], io);
  return { code, out: io.out(), err: io.err() };
}

async function findings(
  home: string,
): Promise<{ code: number; ok: boolean; checks: Finding[]; by(check: string): Finding[] }> {
  const r = await doctor(home, "--json", "--timeout", "3");
  expect(r.err).toBe("");
  const j = JSON.parse(r.out) as { home: string; ok: boolean; checks: Finding[] };
  expect(j.home).toBe(home);
  return { code: r.code, ok: j.ok, checks: j.checks, by: (check) => j.checks.filter((c) => c.check === check) };
}

let n = 0;
/** A new node's home (its own fleet) with the given config.toml. */
async function home(config: string, pki: { days?: number; now?: Date } = {}): Promise<string> {
  const h = join(tmp, `h${++n}`);
  await initPki(ensureHome(homePaths(h)), { name: `node${n}`, ...pki });
  writeFileSync(join(h, "config.toml"), config);
  return h;
}

describe("doctor", () => {
  it("a working node with one live peer, one dead, one under another name and one pinned to another certificate: each said, exit 1", async () => {
    const h = fleet.homes.alpha;
    const port = await freePort();
    writeFileSync(join(h, "config.toml"), `host = "127.0.0.1"\nport = ${port}\nmodel_url = "${model.url}"\n`);
    for (const args of [
      ["beta", beta.url],
      ["gone", `https://127.0.0.1:${closedPort}`],
      ["alias", beta.url],
      ["gamma", gamma.url, "--fingerprint", Array(32).fill("AB").join(":")],
    ])
      expect(await runCli(["--home", h, "peers", "add", ...args], bufferIo())).toBe(0);
    const f = await findings(h);
    expect(f.code).toBe(1);
    expect(f.ok).toBe(false);
    const status = Object.fromEntries(f.checks.map((c) => [c.check, c.status]));
    expect(status).toMatchObject({
      certificate: "ok",
      "fleet CA": "ok",
      key: "ok",
      port: "ok",
      model: "ok",
      database: "ok",
      "peer beta": "ok",
      "peer gone": "fail",
      "peer alias": "fail",
      "peer gamma": "fail",
    });
    expect(f.by("permissions").every((c) => c.status === "ok")).toBe(true);
    expect(f.by("permissions").map((c) => c.detail)).toEqual([
      `${h} is 0700`,
      `${h}/secrets is 0700`,
      `${h}/secrets/node.key is 0600`,
      `${h}/secrets/ca.key is 0600`,
      `${h}/a2a-node.db is 0600`,
    ]);
    expect(f.by("certificate")[0].detail).toMatch(/^node "alpha": valid, expires in 36[45] days/);
    expect(f.by("port")[0].detail).toBe(`127.0.0.1:${port} is free for 'a2a-node serve'`);
    expect(f.by("model")[0].detail).toBe(`openai: ${model.url}/models answered 200`);
    expect(f.by("peer beta")[0].detail).toMatch(
      new RegExp(`^${beta.url} answers over mutual TLS: card "beta".* \\(\\d+ ms\\), signed by beta$`),
    );
    expect(f.by("peer gone")[0]).toMatchObject({
      detail: `cannot reach peer 'gone' at https://127.0.0.1:${closedPort}: connection refused`,
      fix: "is 'a2a-node serve' running there, on that port?",
    });
    expect(f.by("peer alias")[0].detail).toMatch(
      /is not who we expected: the server is fleet node 'beta', not 'alias'/,
    );
    expect(f.by("peer gamma")[0].detail).toMatch(
      /is not who we expected: the server is 'gamma' by its fleet certificate, but that certificate \(fingerprint [0-9A-F:]+\) is not the pinned AB:AB:/,
    );

    const text = await doctor(h, "--timeout", "3");
    expect(text.code).toBe(1);
    expect(text.out).toMatch(/^a2a-node doctor: .*\n/);
    expect(text.out).toMatch(/^✓ peer beta +https:\/\/127\.0\.0\.1:\d+ answers over mutual TLS/m);
    expect(text.out).toMatch(
      /^✗ peer gone +cannot reach peer 'gone'.*\n +fix: is 'a2a-node serve' running there, on that port\?$/m,
    );
    expect(text.out).toMatch(/\n3 problems\n$/);
    for (const name of ["gone", "alias", "gamma"]) await runCli(["--home", h, "peers", "remove", name], bufferIo());
    rmSync(join(h, "config.toml"));
  });

  it("an expired certificate fails with how to get a new one; peers are not dialled with it", async () => {
    const h = await home(`executor = "echo"\nport = 0\n`, { days: 1, now: new Date(Date.now() - 400 * 86_400_000) });
    const f = await findings(h);
    expect(f.code).toBe(1);
    const cert = f.by("certificate")[0];
    expect(cert.status).toBe("fail");
    expect(cert.detail).toMatch(/^node "node\d+": expired on \d{4}-\d\d-\d\dT.*; peers refuse it$/);
    // This home holds the fleet CA: it renews its own certificate, keeping the key (not a new bundle, which breaks
    // pins).
    expect(cert.fix).toBe(
      "renew it here with this home's fleet CA, keeping its key (so pins of it hold): a2a-node pki renew",
    );
    expect(f.by("fleet CA")[0].status).toBe("ok");

    // A home without the CA key gets its new certificate from the CA machine.
    const bundle = join(tmp, "expired.bundle");
    const then = new Date(Date.now() - 300 * 86_400_000);
    await issueBundle(homePaths(h), { name: "faraway", days: 1, out: bundle, now: then });
    const far = join(tmp, "faraway");
    await installBundle(ensureHome(homePaths(far)), bundle, { now: then });
    const farCert = (await findings(far)).by("certificate")[0];
    expect(farCert.status).toBe("fail");
    expect(farCert.fix).toMatch(
      /^get a new one: on the CA machine 'a2a-node pki issue faraway --out faraway\.bundle'; here, move .*node\.key and .*node\.crt aside, then 'a2a-node init-pki --bundle faraway\.bundle'$/,
    );
  });

  it("a certificate expiring within 30 days is a warning, not a failure (exit 0)", async () => {
    const h = await home(`executor = "echo"\nport = 0\n`, { days: 10 });
    const f = await findings(h);
    expect(f.by("certificate")[0]).toMatchObject({ status: "warn" });
    expect(f.by("certificate")[0].detail).toMatch(/expires in (9|10) days/);
    expect(f.code).toBe(0);
    expect(f.ok).toBe(true);
    const text = await doctor(h);
    expect(text.out).toMatch(/^! certificate /m);
    expect(text.out).toMatch(/\nno problems, 1 warning\n$/);
    expect(f.by("database")[0]).toMatchObject({ status: "skip" });
    expect(f.by("model")[0]).toMatchObject({ status: "skip", detail: "the echo executor needs no model endpoint" });
  });

  it("a home others can read, and keys readable by others, each fail with the chmod to run", async () => {
    const h = await home(`executor = "echo"\nport = 0\n`);
    chmodSync(h, 0o755);
    chmodSync(homePaths(h).nodeKey, 0o644);
    const f = await findings(h);
    expect(f.code).toBe(1);
    expect(f.by("permissions").filter((c) => c.status === "fail")).toEqual([
      {
        check: "permissions",
        status: "fail",
        detail: `${h} is 0755: others can look inside, and it holds keys`,
        fix: `chmod 700 ${h}`,
      },
      {
        check: "permissions",
        status: "fail",
        detail: `${homePaths(h).nodeKey} is 0644: readable by others`,
        fix: `chmod 600 ${homePaths(h).nodeKey}`,
      },
    ]);
  });

  it("a model endpoint that does not answer fails, naming the URL and the setting", async () => {
    const h = await home(`port = 0\nmodel_url = "http://127.0.0.1:${closedPort}/v1"\n`);
    const f = await findings(h);
    expect(f.code).toBe(1);
    expect(f.by("model")[0].status).toBe("fail");
    expect(f.by("model")[0].detail).toContain(`http://127.0.0.1:${closedPort}/v1/models is unreachable`);
    expect(f.by("model")[0].fix).toContain("model_url (config.toml, A2A_NODE_MODEL_URL, --model-url)");
  });

  it("a certificate from another fleet than the home's CA fails the CA check", async () => {
    const h = await home(`executor = "echo"\nport = 0\n`);
    copyFileSync(homePaths(other.homes.stranger).caCert, homePaths(h).caCert);
    const f = await findings(h);
    expect(f.by("fleet CA")[0]).toMatchObject({ status: "fail" });
    expect(f.by("fleet CA")[0].detail).toMatch(
      /^the node certificate was not issued by this home's fleet CA "a2a-node fleet CA [0-9a-f]+ \(stranger\)"$/,
    );
  });

  it("the port: in use by another process fails; held by this home's running node is fine", async () => {
    const busy = await freePort();
    const h = await home(`executor = "echo"\nhost = "127.0.0.1"\nport = ${busy}\n`);
    const squatter: Server = await new Promise((resolve) => {
      const s = createServer().listen(busy, "127.0.0.1", () => resolve(s));
    });
    try {
      const f = await findings(h);
      expect(f.by("port")[0]).toMatchObject({
        status: "fail",
        detail: `127.0.0.1:${busy} is in use by another process (not this home's node)`,
      });
      expect(f.by("port")[0].fix).toContain(`ss -ltnp sport = :${busy}`);
    } finally {
      await new Promise((r) => squatter.close(r));
    }
    const node = await serveBinary(h, ["--port", String(busy)]);
    try {
      const f = await findings(h);
      expect(f.by("port")[0]).toMatchObject({
        status: "ok",
        detail: `127.0.0.1:${busy} is held by this home's node (PID ${node.pid}), which answers at https://127.0.0.1:${busy}/health/ready`,
      });
      expect(f.by("database")[0].status).toBe("ok");
      expect(f.code).toBe(0);
    } finally {
      await node.stop();
    }
  });

  it("judges the node as it runs: started with flags (another port, another model URL), no false failure from the config file's defaults", async () => {
    const h = await home(""); // nothing in the config: its defaults are port 9443 and Ollama's URL
    const node = await serveBinary(h, ["--executor", "openai", "--model-url", model.url]);
    try {
      const f = await findings(h);
      expect(f.by("node")[0]).toMatchObject({
        status: "ok",
        detail: expect.stringMatching(
          new RegExp(
            `^PID ${node.pid}, node "node\\d+" since .*, executor openai, tasks in .*a2a-node\\.db; settings from flags: host, port, executor, model_url$`,
          ),
        ),
      });
      expect(f.by("port")[0]).toMatchObject({
        status: "ok",
        detail: `127.0.0.1:${node.port} is held by this home's node (PID ${node.pid}), which answers at https://127.0.0.1:${node.port}/health/ready`,
      });
      expect(f.by("model")[0]).toMatchObject({
        status: "ok",
        detail: expect.stringMatching(
          new RegExp(
            `^openai at ${model.url.replace(/[.]/g, "\\.")}: .* answered 200 \\(as the running node sees it\\)$`,
          ),
        ),
      });
      expect(f.code, JSON.stringify(f.checks.filter((c) => c.status === "fail"))).toBe(0);
      // The model server going away is seen as the node sees it.
      model.stop();
      const down = await findings(h);
      expect(down.by("model")[0]).toMatchObject({
        status: "fail",
        detail: expect.stringContaining("(as the running node sees it)"),
      });
      expect(down.by("model")[0].fix).toContain(model.url);
    } finally {
      await node.stop();
      model = startFakeModel();
    }
    // Stopped: back to the config file's view, which is what the next start would use.
    const after = await findings(h);
    expect(after.by("node")).toEqual([]);
    expect(after.by("port")[0].detail).toMatch(/:9443 (is free|is in use)/);
  });

  it("a database that is not one fails with what to do; peers are then not checked", async () => {
    const h = await home(`executor = "echo"\nport = 0\n`);
    writeFileSync(homePaths(h).database, "this is not a database, it is text ".repeat(200), { mode: 0o600 });
    const f = await findings(h);
    expect(f.code).toBe(1);
    expect(f.by("database")[0]).toMatchObject({ status: "fail" });
    expect(f.by("database")[0].detail).toContain("file is not a database");
    expect(f.by("peers")[0]).toMatchObject({ status: "skip" });
  });

  it("a bad configuration fails naming the key; no home at all fails with how to make one", async () => {
    const h = await home(`port = "nine"\n`);
    const f = await findings(h);
    expect(f.by("configuration")[0]).toMatchObject({ status: "fail" });
    expect(f.by("configuration")[0].detail).toContain("port");
    expect(f.by("configuration")[0].fix).toContain("a2a-node serve --check");
    expect(f.by("port")[0]).toMatchObject({ status: "skip", detail: "needs a valid configuration" });

    const missing = join(tmp, "nowhere");
    const r = await findings(missing);
    expect(r.code).toBe(1);
    expect(r.checks).toEqual([
      {
        check: "home",
        status: "fail",
        detail: `no a2a-node home at ${missing}`,
        fix: "a2a-node init-pki --name NAME (a new fleet) or --bundle FILE; or pass --home DIR",
      },
    ]);
  });

  it("a peer that accepts the connection but never answers is given up after --timeout", async () => {
    const h = await home(`executor = "echo"\nport = 0\n`);
    const held: Socket[] = [];
    const silent: Server = await new Promise((resolve) => {
      const srv = createServer((socket) => void held.push(socket)).listen(0, "127.0.0.1", () => resolve(srv));
    });
    try {
      const port = (silent.address() as { port: number }).port;
      expect(await runCli(["--home", h, "peers", "add", "mute", `https://127.0.0.1:${port}`], bufferIo())).toBe(0);
      const io = bufferIo({});
      expect(await runCli(["--home", h, "doctor", "--json", "--timeout", "0.5"], io)).toBe(1);
      const mute = (JSON.parse(io.out()).checks as Finding[]).find((c) => c.check === "peer mute");
      expect(mute).toMatchObject({ status: "fail", detail: `https://127.0.0.1:${port} did not answer within 0.5 s` });
    } finally {
      for (const socket of held) socket.destroy();
      silent.close();
    }
  });

  it.skipIf(process.getuid?.() !== 0)(
    "a home the caller cannot look inside says whose it is and how to check it (run as nobody)",
    async () => {
      const h = await home(`executor = "echo"\n`);
      chmodSync(tmp, 0o711); // as /var/lib is: others may pass through to the home, not look inside it
      const p = Bun.spawnSync(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", requireBinary(), "--home", h, "doctor"],
        { stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/bin:/bin" } },
      );
      expect(p.stderr.toString()).toBe("");
      expect(p.exitCode).toBe(1);
      expect(p.stdout.toString()).toBe(
        `a2a-node doctor: ${h}\n✗ home  cannot look inside ${h} (owned by uid 0)\n        fix: run doctor as its owner: sudo a2a-node doctor --home ${h}\n1 problem\n`,
      );
    },
  );

  it("usage errors", async () => {
    mkdirSync(join(tmp, "u"), { recursive: true });
    for (const args of [["--timeout", "0"], ["extra"], ["--jsn"]]) {
      const r = await doctor(join(tmp, "u"), ...args);
      expect(r.code).toBe(2);
      expect(r.err).toContain("see 'a2a-node doctor --help'");
    }
  });
});
