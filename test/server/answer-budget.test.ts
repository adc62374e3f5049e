/**
 * Answers of any size are written under backpressure and counted against a budget while their client has not
 * read them (src/server/answer-budget.ts, the slices of src/server/http1.ts): a client that asks for a large
 * answer and never reads holds that answer once, as built, not copies of it in the socket's buffers; a caller
 * holding its budget waits for room and is refused if none comes; a client that takes nothing for the idle
 * timeout is cut and its bytes given back. Real node:net sockets on loopback.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";
import { once } from "node:events";
import { serveHttp1, type Http1Connection, type HttpResponse } from "../../src/server/http1";
import { tooLargeResponse } from "../../src/server/request-router";
import { AnswerBudget } from "../../src/server/answer-budget";
import { A2AError } from "../../src/protocol/errors";
import { holdAnswer } from "../../src/rpc/answer-holds";

const servers: Server[] = [];
const clients: Socket[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
  for (const s of servers.splice(0)) {
    for (const sock of (s as Server & { open: Socket[] }).open) sock.destroy();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

/** A server whose every answer is `makeAnswer()`, counted for caller "alpha" in `budget`. */
async function serve(budget: AnswerBudget, makeAnswer: () => HttpResponse, idleTimeoutMs = 10_000) {
  const connections: Http1Connection[] = [];
  const handled: (() => void)[] = [];
  const server = createServer((socket) => {
    (server as Server & { open: Socket[] }).open.push(socket);
    connections.push(
      serveHttp1(socket, {
        maxBodyBytes: 1024,
        maxHeadBytes: 4096,
        idleTimeoutMs,
        headTimeoutMs: 10_000,
        tooLarge: tooLargeResponse,
        handle: async () => {
          const res = makeAnswer();
          for (const h of handled.splice(0)) h();
          return res;
        },
      }),
    );
  });
  (server as Server & { open: Socket[] }).open = [];
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    port: (server.address() as AddressInfo).port,
    connections,
    nextHandled: () => new Promise<void>((r) => handled.push(r)),
  };
}

/** A client that asks once and reads nothing until told to. */
async function stalledClient(port: number, path = "/"): Promise<{ socket: Socket; readAll(): Promise<Buffer> }> {
  const socket = connect(port, "127.0.0.1");
  clients.push(socket);
  socket.on("error", () => {});
  await once(socket, "connect");
  socket.pause();
  socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  return {
    socket,
    readAll: () =>
      new Promise<Buffer>((resolve) => {
        // The whole response: head, then content-length bytes.
        const chunks: Buffer[] = [];
        let got = 0;
        let want = Infinity;
        let headEnd = -1;
        socket.on("data", (d: Buffer) => {
          chunks.push(d);
          got += d.length;
          if (headEnd === -1) {
            const all = Buffer.concat(chunks);
            headEnd = all.indexOf("\r\n\r\n");
            if (headEnd !== -1)
              want = headEnd + 4 + Number(/content-length: (\d+)/i.exec(all.toString("latin1", 0, headEnd))?.[1]);
          }
          if (got >= want) resolve(Buffer.concat(chunks).subarray(headEnd + 4, want));
        });
        socket.resume();
      }),
  };
}

/** Lets everything the handler's answer started run (its first writes happen in microtasks and I/O callbacks). */
const settle = () => new Promise<void>((r) => setImmediate(r));

const BIG = 32 * 1024 * 1024;

describe("a large answer to a client that does not read", () => {
  it("waits as the one answer built, a slice at a time, not copied whole into the socket; counted until read, then given back", async () => {
    const budget = new AnswerBudget({ perCaller: 1024 * 1024 * 1024, total: 1024 * 1024 * 1024 });
    const text = JSON.stringify({ big: "x".repeat(BIG) });
    const { port, connections, nextHandled } = await serve(budget, () => ({
      status: 200,
      body: text,
      ...holdAnswer({ caller: { name: "alpha", fingerprint: "" }, answers: budget.holderFor("alpha") }, text),
    }));
    const handled = nextHandled();
    const client = await stalledClient(port);
    await handled;
    await settle();
    const state = connections[0].state();
    // Before: the whole 32 MiB sat in the socket's user-space buffer. Now at most one slice does.
    expect(state.unsentBytes).toBeLessThanOrEqual(64 * 1024);
    // What the kernel could not take yet is still counted for alpha (the kernel holds at most a few MiB).
    expect(budget.held("alpha")).toBeGreaterThan(BIG - 16 * 1024 * 1024);
    expect(budget.held()).toBe(budget.held("alpha"));
    const body = await client.readAll();
    expect(body.length).toBe(Buffer.byteLength(text));
    expect(body.equals(Buffer.from(text))).toBe(true);
    expect(budget.held("alpha")).toBe(0);
  });

  it("streams a large event the same way: chunked framing intact, its bytes counted until written", async () => {
    const budget = new AnswerBudget({ perCaller: 1024 * 1024 * 1024, total: 1024 * 1024 * 1024 });
    const big = `data: ${"y".repeat(4 * 1024 * 1024)}\n\n`;
    const hold = budget.hold("alpha", Buffer.byteLength(big))!;
    async function* events() {
      yield "data: first\n\n";
      yield { text: big, hold };
      yield "data: last\n\n";
    }
    const { port } = await serve(budget, () => ({
      status: 200,
      headers: { "content-type": "text/event-stream" },
      stream: events(),
    }));
    const socket = connect(port, "127.0.0.1");
    clients.push(socket);
    await once(socket, "connect");
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    const chunks: Buffer[] = [];
    socket.on("data", (d: Buffer) => chunks.push(d));
    while (!Buffer.concat(chunks).includes("\r\n0\r\n\r\n")) await once(socket, "data");
    const raw = Buffer.concat(chunks);
    // De-chunk and compare.
    let at = raw.indexOf("\r\n\r\n") + 4;
    const out: Buffer[] = [];
    for (;;) {
      const eol = raw.indexOf("\r\n", at);
      const n = Number.parseInt(raw.toString("latin1", at, eol), 16);
      if (n === 0) break;
      out.push(raw.subarray(eol + 2, eol + 2 + n));
      at = eol + 2 + n + 2;
    }
    expect(Buffer.concat(out).toString()).toBe(`data: first\n\n${big}data: last\n\n`);
    expect(budget.held()).toBe(0);
  });

  it("cuts a client that takes nothing for the idle timeout, and gives its bytes back", async () => {
    const budget = new AnswerBudget({ perCaller: 1024 * 1024 * 1024, total: 1024 * 1024 * 1024 });
    const text = "z".repeat(BIG);
    const { port, nextHandled } = await serve(
      budget,
      () => ({
        status: 200,
        body: text,
        ...holdAnswer({ caller: { name: "alpha", fingerprint: "" }, answers: budget.holderFor("alpha") }, text),
      }),
      300,
    );
    const handled = nextHandled();
    await stalledClient(port);
    await handled;
    const serverSide = (servers[0] as Server & { open: Socket[] }).open[0];
    await settle();
    expect(budget.held("alpha")).toBeGreaterThan(0);
    await once(serverSide, "close");
    await settle();
    expect(budget.held("alpha")).toBe(0);
  });
});

describe("AnswerBudget", () => {
  it("lets a caller's first answer go whatever its size; refuses another built while it holds its budget, and the node's", () => {
    const b = new AnswerBudget({ perCaller: 100, total: 150 });
    const first = b.hold("alpha", 1000);
    expect(first).toBeDefined();
    expect(b.hold("alpha", 1)).toBeUndefined();
    expect(b.admits("alpha")).toBe(false);
    // beta has its own budget, but the node's total is spent too.
    expect(b.admits("beta")).toBe(false);
    first!.release(900);
    expect(b.held("alpha")).toBe(100);
    expect(b.admits("beta")).toBe(true);
    expect(b.admits("alpha")).toBe(false);
    first!.release();
    first!.release(); // twice gives back nothing more
    expect(b.held()).toBe(0);
    expect(b.admits("alpha")).toBe(true);
  });

  it("names the limit it refuses for: the caller's, or the node's", () => {
    const b = new AnswerBudget({ perCaller: 100, total: 150 });
    b.hold("alpha", 120);
    const mine = b.refusal("alpha");
    expect(mine).toBeInstanceOf(A2AError);
    expect(mine.code).toBe(-32603);
    expect(mine.reason).toBe("RESOURCE_EXHAUSTED");
    expect(mine.metadata).toMatchObject({ limit: "answer_bytes_per_caller", heldBytes: "120" });
    expect(mine.message).toContain(
      "answers to alpha that it has not read hold 120 bytes, this node's limit of 100 (answer_bytes_per_caller)",
    );
    b.hold("beta", 40);
    expect(b.refusal("beta").metadata).toMatchObject({ limit: "answer_bytes_in_flight", heldBytes: "160" });
  });

  it("admit() waits until the caller's answers are read, and refuses after waitMs if they are not", async () => {
    const b = new AnswerBudget({ perCaller: 100, total: 1000, waitMs: 60_000 });
    const h = b.hold("alpha", 500)!;
    let admitted: unknown = "pending";
    const waiting = b.admit("alpha").then((r) => (admitted = r));
    expect((await b.admit("beta")).refused).toBeUndefined(); // another caller goes at once
    await settle();
    expect(admitted).toBe("pending");
    h.release(450); // still 50 held: under the budget, so it goes
    await waiting;
    expect((admitted as { refused?: unknown }).refused).toBeUndefined();

    const quick = new AnswerBudget({ perCaller: 100, total: 1000, waitMs: 50 });
    quick.hold("alpha", 500);
    const refused = await quick.admit("alpha");
    expect(refused.refused?.metadata?.limit).toBe("answer_bytes_per_caller");
  });

  it("lets waiting requests through one at a time, each once the one before has built its answer", async () => {
    const b = new AnswerBudget({ perCaller: 100, total: 1000, waitMs: 60_000 });
    const h = b.hold("alpha", 500)!;
    const order: number[] = [];
    const turns = [0, 1, 2].map((i) => b.admit("alpha").then((a) => (order.push(i), a)));
    // A new request of alpha queues behind those that wait, even once there is room.
    h.release();
    const first = await turns[0];
    await settle();
    expect(order).toEqual([0]);
    const later = b.admit("alpha").then((a) => (order.push(3), a));
    first.done(); // built: the next goes
    (await turns[1]).done();
    (await turns[2]).done();
    await later;
    expect(order).toEqual([0, 1, 2, 3]);
    // Had the first built a large answer, the next would have waited for it to be read.
    const c = new AnswerBudget({ perCaller: 100, total: 1000, waitMs: 60_000 });
    const held = c.hold("alpha", 500)!;
    const [x, y] = [c.admit("alpha"), c.admit("alpha")];
    held.release();
    const gotX = await x;
    const big = c.hold("alpha", 300)!;
    gotX.done();
    let yGone = false;
    void y.then(() => (yGone = true));
    await settle();
    expect(yGone).toBe(false);
    big.release();
    expect((await y).refused).toBeUndefined();
  });

  it("holdAnswer counts only answers of 16 KiB or more, and throws the refusal when one does not fit", () => {
    const b = new AnswerBudget({ perCaller: 100 * 1024, total: 1024 * 1024 });
    const ctx = { caller: { name: "alpha", fingerprint: "" }, answers: b.holderFor("alpha") };
    expect(holdAnswer(ctx, "small").hold).toBeUndefined();
    const big = holdAnswer(ctx, "é".repeat(60 * 1024)); // 120 KiB of UTF-8: counted in bytes
    expect(b.held("alpha")).toBe(120 * 1024);
    expect(() => holdAnswer(ctx, "x".repeat(20 * 1024))).toThrow(A2AError);
    big.hold!.release();
    expect(b.held()).toBe(0);
  });
});
