/**
 * The token listener (token_port) of the compiled node: callers outside the fleet with a bearer token from
 * `a2a-node tokens add NAME`, over TLS with the node's own certificate (no client certificate), and over plain
 * HTTP (token_tls = off). Tokens scope tasks like certificates; wrong and revoked tokens get 401 with
 * WWW-Authenticate; only the token's hash is stored. Another node reaches it as a peer outside the fleet.
 */
import { verifyFleetCard } from "../../src/client/card-trust";
import type { AgentCard } from "../../src/protocol/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runBinary, serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { userMessage } from "../helpers/rpc";

let fleet: Fleet;
let node: ServedBinary;
let tokenUrl: string;
let ca: string;
const tokens: Record<string, string> = {};
const started: ServedBinary[] = [];

const cli = (home: string, ...args: string[]) => runBinary(["--home", home, ...args]);

/** A JSON-RPC call to the token listener, trusting the fleet CA (the node's certificate) and checking the host name. */
async function rpc(base: string, method: string, params: unknown, token?: string) {
  const res = await fetch(`${base}/`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "a2a-version": "1.0",
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    tls: { ca },
    // A connection of its own per call: revoking a token closes the connections it was used on, and a pooled
    // one the server is closing at that moment would fail the next call with ECONNRESET (a client's race, not
    // the node's answer, which is what these tests read).
    keepalive: false,
  } as RequestInit);
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta"]);
  ca = fleet.identity("alpha").ca;
  for (const name of ["hermes", "carol"]) {
    const made = await cli(fleet.homes.alpha, "tokens", "add", name);
    expect(made.code, made.stderr).toBe(0);
    tokens[name] = made.stdout.trim();
  }
  // An extended card for fleet members: token callers, outside the fleet, are not shown it.
  writeFileSync(
    join(fleet.homes.alpha, "config.toml"),
    `[extended_card]\ndescription = "alpha, as the fleet sees it"\n`,
  );
  node = await serveBinary(fleet.homes.alpha, ["--executor", "echo", "--token-port", "0"]);
  started.push(node);
  tokenUrl = (await node.waitForLine({ msg: /^token listener open/ })).url as string;
});

afterAll(async () => {
  await Promise.all(started.map((n) => n.stop("SIGKILL").catch(() => undefined)));
  fleet?.cleanup();
});

describe("tokens add, list, revoke", () => {
  it("prints a token once, keeps only its SHA-256, and lists callers without their tokens", async () => {
    expect(tokens.hermes).toMatch(/^a2a_[A-Za-z0-9_-]{43}$/);
    expect(tokens.carol).not.toBe(tokens.hermes);
    const db = readFileSync(join(fleet.homes.alpha, "a2a-node.db"));
    for (const t of Object.values(tokens)) {
      expect(db.includes(Buffer.from(t))).toBe(false);
      expect(db.includes(Buffer.from(createHash("sha256").update(t).digest("hex")))).toBe(true);
    }
    const list = await cli(fleet.homes.alpha, "tokens", "list", "--json");
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([
      { name: "carol", caller: "token:carol", createdAt: expect.any(String) },
      { name: "hermes", caller: "token:hermes", createdAt: expect.any(String) },
    ]);
    for (const t of Object.values(tokens))
      expect(list.stdout + (await cli(fleet.homes.alpha, "tokens", "list")).stdout).not.toContain(t);
    const again = await cli(fleet.homes.alpha, "tokens", "add", "hermes");
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("a token for 'hermes' already exists");
    expect((await cli(fleet.homes.alpha, "tokens", "add", "Bad Name!")).code).toBe(2);
    expect((await cli(fleet.homes.alpha, "tokens", "revoke", "nobody")).code).toBe(3);
  });
});

describe("the token listener over TLS with the node's certificate", () => {
  it("serves its card without a token, declaring the bearer scheme and its own URL", async () => {
    const res = await fetch(`${tokenUrl}/.well-known/agent-card.json`, { tls: { ca } } as RequestInit);
    expect(res.status).toBe(200);
    const card = (await res.json()) as any;
    expect(card.securitySchemes).toEqual({
      bearer: { httpAuthSecurityScheme: { scheme: "Bearer", description: expect.any(String) } },
    });
    expect(card.securityRequirements).toEqual([{ schemes: { bearer: { list: [] } } }]);
    expect(card.supportedInterfaces.map((i: { url: string }) => i.url)).toContain(`${tokenUrl}/`);
    // The token listener speaks HTTP/1.1 only: its card lists no GRPC interface.
    expect(card.supportedInterfaces.map((i: { protocolBinding: string }) => i.protocolBinding)).toEqual([
      "JSONRPC",
      "HTTP+JSON",
    ]);
  });

  it("shows token callers no extended card; a fleet member over mutual TLS gets it, signed by the node", async () => {
    const card = (await (
      await fetch(`${tokenUrl}/.well-known/agent-card.json`, { tls: { ca } } as RequestInit)
    ).json()) as any;
    expect(card.capabilities.extendedAgentCard).toBe(false);
    const refused = await rpc(tokenUrl, "GetExtendedAgentCard", {}, tokens.hermes);
    expect([refused.status, refused.body.error.code]).toEqual([200, -32004]);
    expect(refused.body.error.message).toContain("a token caller is outside the fleet");
    const res = await fetch(`${node.url}/`, {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetExtendedAgentCard", params: {} }),
      tls: { ...fleet.identity("beta"), checkServerIdentity: () => undefined },
    } as RequestInit);
    const extended = ((await res.json()) as any).result as AgentCard;
    expect(extended.description).toBe("alpha, as the fleet sees it");
    expect(extended.capabilities.extendedAgentCard).toBe(true);
    expect((await verifyFleetCard(extended, { ca, name: "alpha" })).name).toBe("alpha");
  });

  it("runs a task for a valid token and shows it only to that token's caller", async () => {
    const sent = await rpc(tokenUrl, "SendMessage", { message: userMessage("from hermes") }, tokens.hermes);
    expect(sent.status, sent.text).toBe(200);
    const task = sent.body.result.task;
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect((await rpc(tokenUrl, "GetTask", { id: task.id }, tokens.hermes)).body.result.id).toBe(task.id);
    expect((await rpc(tokenUrl, "GetTask", { id: task.id }, tokens.carol)).body.error.code).toBe(-32001);
    expect((await rpc(tokenUrl, "ListTasks", {}, tokens.carol)).body.result.tasks).toEqual([]);
    // The HTTP+JSON binding on the same listener, same caller.
    const rest = await fetch(`${tokenUrl}/tasks/${task.id}`, {
      headers: { authorization: `Bearer ${tokens.hermes}`, "a2a-version": "1.0" },
      tls: { ca },
    } as RequestInit);
    expect(rest.status).toBe(200);
    expect(((await rest.json()) as any).id).toBe(task.id);
    // A fleet member on the mutual-TLS listener is another caller: 'token:hermes' is never a certificate's name.
    const beta = await fetch(`${node.url}/`, {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: task.id } }),
      tls: { ...fleet.identity("beta"), checkServerIdentity: () => undefined },
    } as RequestInit);
    expect(((await beta.json()) as any).error.code).toBe(-32001);
  });

  it("answers 401 with WWW-Authenticate without a token, with a wrong one, and with a revoked one", async () => {
    const none = await rpc(tokenUrl, "ListTasks", {});
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe('Bearer realm="a2a-node"');
    expect(none.body.error.status).toBe("UNAUTHENTICATED");
    const wrong = await rpc(tokenUrl, "ListTasks", {}, `${tokens.hermes}x`);
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("www-authenticate")).toBe('Bearer realm="a2a-node", error="invalid_token"');
    const made = await cli(fleet.homes.alpha, "tokens", "add", "dave");
    const dave = made.stdout.trim();
    expect((await rpc(tokenUrl, "ListTasks", {}, dave)).status).toBe(200);
    const revoked = await cli(fleet.homes.alpha, "tokens", "revoke", "dave");
    expect(revoked.code, revoked.stderr).toBe(0);
    const after = await rpc(tokenUrl, "ListTasks", {}, dave);
    expect(after.status).toBe(401);
    expect(after.headers.get("www-authenticate")).toContain('error="invalid_token"');
    // Health and metrics are not for token callers.
    for (const path of ["/metrics", "/health/ready"]) {
      const res = await fetch(`${tokenUrl}${path}`, {
        headers: { authorization: `Bearer ${tokens.hermes}` },
        tls: { ca },
      } as RequestInit);
      expect(res.status, path).toBe(404);
    }
    // Nothing the node logged holds a token.
    for (const t of [...Object.values(tokens), dave]) expect(node.log()).not.toContain(t);
  });

  it("is reached by another node as a peer outside the fleet (bearer token from a file, the fleet CA given with --ca)", async () => {
    const tokenFile = join(fleet.root, "hermes.token");
    writeFileSync(tokenFile, `${tokens.hermes}\n`, { mode: 0o600 });
    const caFile = join(fleet.root, "alpha-ca.pem");
    writeFileSync(caFile, ca);
    const added = await cli(
      fleet.homes.beta,
      "peers",
      "add",
      "alpha-tokens",
      tokenUrl,
      "--token-file",
      tokenFile,
      "--ca",
      caFile,
    );
    expect(added.code, added.stderr).toBe(0);
    const sent = await cli(
      fleet.homes.beta,
      "send",
      "--agent",
      "alpha-tokens",
      "--task",
      "over the token listener",
      "--wait",
      "--json",
    );
    expect(sent.code, sent.stderr).toBe(0);
    const task = JSON.parse(sent.stdout);
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    // Its task belongs to token:hermes: hermes's own requests see it.
    expect((await rpc(tokenUrl, "GetTask", { id: task.id }, tokens.hermes)).body.result.id).toBe(task.id);
    expect(sent.stdout + sent.stderr + added.stdout + added.stderr).not.toContain(tokens.hermes);
  });
});

describe("the token listener over plain HTTP (token_tls = off)", () => {
  it("serve --check warns; the listener works over http:// and still wants a token", async () => {
    const check = await cli(fleet.homes.beta, "serve", "--check", "--token-port", "9999", "--token-tls", "off");
    expect(check.code).toBe(0);
    expect(check.stderr).toContain("warning: the token listener (token_port = 9999, on 127.0.0.1) is on without TLS");
    expect((await cli(fleet.homes.beta, "serve", "--check", "--token-port", "9999")).stderr).toBe("");
    const made = await cli(fleet.homes.beta, "tokens", "add", "script");
    const token = made.stdout.trim();
    const other = (await cli(fleet.homes.beta, "tokens", "add", "other")).stdout.trim();
    // The authorization policy names token callers as the node knows them.
    writeFileSync(join(fleet.homes.beta, "config.toml"), `[[authorize]]\npeers = ["token:script"]\nmethods = ["*"]\n`);
    const plain = await serveBinary(fleet.homes.beta, [
      "--executor",
      "echo",
      "--token-port",
      "0",
      "--token-tls",
      "off",
    ]);
    started.push(plain);
    const warned = await plain.waitForLine({ msg: /^token listener open over plain HTTP/ });
    expect(warned.level).toBe("warn");
    const url = warned.url as string;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await rpc(url, "ListTasks", {})).status).toBe(401);
    const sent = await rpc(url, "SendMessage", { message: userMessage("plain") }, token);
    expect(sent.body.result.task.status.state, sent.text).toBe("TASK_STATE_COMPLETED");
    const denied = await rpc(url, "SendMessage", { message: userMessage("not allowed") }, other);
    expect(denied.body.error.code, denied.text).toBe(-32000);
    expect(denied.body.error.message).toContain("peer 'token:other' may not call SendMessage");
  });
});
