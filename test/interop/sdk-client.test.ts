/**
 * Interop: the official A2A TypeScript SDK (@a2a-js/sdk 1.3.0) as a client of our compiled node, over
 * mutual TLS. The SDK speaks A2A v1.0 JSON-RPC; we give it a fetch that presents a fleet certificate.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Message, Role, TaskState, type Task } from "@a2a-js/sdk";
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from "@a2a-js/sdk/client";
import { TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from "@a2a-js/sdk/errors";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet } from "../helpers/fleet";

let fleet: Fleet;
let node: ServedBinary;
let fetchImpl: typeof fetch;
const requests: { url: string; version: string | null }[] = [];

beforeAll(async () => {
  fleet = await makeFleet(["beta", "alpha"]);
  node = await serveBinary(fleet.homes.beta, ["--executor", "echo"]);
  const { cert, key, ca } = fleet.identity("alpha");
  fetchImpl = ((url: string | URL | Request, init?: RequestInit) => {
    requests.push({ url: String(url), version: new Headers(init?.headers).get("a2a-version") });
    return fetch(url, { ...init, tls: { cert, key, ca } } as RequestInit);
  }) as typeof fetch;
});

afterAll(async () => {
  await node?.stop("SIGKILL");
  fleet?.cleanup();
});

function sdkMessage(text: string): Message {
  return Message.fromJSON({ messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] });
}

const textOf = (task: Task, artifact = 0) => {
  const content = task.artifacts[artifact]?.parts[0]?.content;
  return content?.$case === "text" ? content.value : undefined;
};

describe("@a2a-js/sdk client against a2a-node", () => {
  let client: Client;
  let sent: Task;
  const text = `hello from the SDK ${crypto.randomUUID()}`;

  it("resolves the agent card from the base URL", async () => {
    const card = await new DefaultAgentCardResolver({ fetchImpl }).resolve(node.url);
    expect(card.name).toBe("beta");
    expect(card.supportedInterfaces[0]).toMatchObject({ protocolBinding: "JSONRPC", protocolVersion: "1.0" });
    expect(Number(new URL(card.supportedInterfaces[0].url).port)).toBe(node.port);
    expect(card.skills.length).toBeGreaterThan(0);
    expect(Object.values(card.securitySchemes).some((s) => s.scheme?.$case === "mtlsSecurityScheme")).toBe(true);
  });

  it("builds a JSON-RPC client from the card (ClientFactory.createFromUrl)", async () => {
    const factory = new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    });
    client = await factory.createFromUrl(node.url);
    expect(client.protocolVersion).toBe("1.0");
  });

  it("sendMessage (blocking) returns the COMPLETED Task with the echoed artifact", async () => {
    const result = await client.sendMessage({ message: sdkMessage(text) } as Parameters<Client["sendMessage"]>[0]);
    expect("status" in result, JSON.stringify(result)).toBe(true);
    sent = result as Task;
    expect(sent.id).toEqual(expect.any(String));
    expect(sent.contextId).toEqual(expect.any(String));
    expect(sent.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(sent)).toBe(text);
    // Every call the SDK made went to our node and named protocol 1.0.
    const rpcCalls = requests.filter((r) => new URL(r.url).pathname === "/");
    expect(rpcCalls.length).toBeGreaterThan(0);
    for (const r of rpcCalls) expect(r.version).toBe("1.0");
  });

  it("getTask returns the same task", async () => {
    const task = await client.getTask({ id: sent.id } as Parameters<Client["getTask"]>[0]);
    expect(task.id).toBe(sent.id);
    expect(task.contextId).toBe(sent.contextId);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task)).toBe(text);
    expect(task.history.some((m) => m.role === Role.ROLE_USER)).toBe(true);
  });

  it("getTask of an unknown id raises the SDK's TaskNotFoundError", async () => {
    const err = await client.getTask({ id: "01NOSUCHTASK0000000000000" } as Parameters<Client["getTask"]>[0]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TaskNotFoundError);
  });

  it("listTasks includes the task", async () => {
    // TASK_STATE_UNSPECIFIED is the SDK's "no status filter" (proto default, omitted on the wire).
    const list = await client.listTasks({ status: TaskState.TASK_STATE_UNSPECIFIED } as Parameters<
      Client["listTasks"]
    >[0]);
    const mine = list.tasks.find((t) => t.id === sent.id);
    expect(mine, JSON.stringify(list)).toBeDefined();
    expect(mine?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(list.totalSize).toBeGreaterThanOrEqual(1);
  });

  it("cancelTask of the completed task raises the SDK's TaskNotCancelableError", async () => {
    const err = await client.cancelTask({ id: sent.id } as Parameters<Client["cancelTask"]>[0]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TaskNotCancelableError);
    const task = await client.getTask({ id: sent.id } as Parameters<Client["getTask"]>[0]);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("getExtendedAgentCard of a node without one raises the SDK's UnsupportedOperationError (its card says false)", async () => {
    const card = await client.getAgentCard();
    expect(card.capabilities?.extendedAgentCard).toBe(false);
    // Client.getAgentCard() asks only when the card advertises one: ask through the transport.
    const err = await client.transport
      .getExtendedAgentCard({ tenant: "" }, { serviceParameters: { "A2A-Version": client.protocolVersion } })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(UnsupportedOperationError);
  });
});
