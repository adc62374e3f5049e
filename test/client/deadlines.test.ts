/**
 * The bounds on a call to a peer (src/client/deadlines.ts) against real sockets on loopback: a host that takes
 * no connection (a listen queue left full: the kernel then drops the next SYN, as a firewall would), a port that
 * takes connections and stays silent, an answer that never ends, and event streams that go silent or keep
 * talking. The commands' own behaviour, through the compiled binary, is in test/e2e/client-cli.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { DEFAULT_PEER_TIMEOUTS, PeerTimeoutError, withDeadlines, type SecuredFetch } from "../../src/client/deadlines";

const held: Socket[] = [];
let silent: Server;
let silentPort: number;
let http: ReturnType<typeof Bun.serve>;
const plain: SecuredFetch = (url, init) => fetch(url, init);
const quick = { connectMs: 500, handshakeMs: 500, answerMs: 500, streamIdleMs: 1000 };

beforeAll(async () => {
  silent = createServer((socket) => void held.push(socket));
  await new Promise<void>((r) => silent.listen(0, "127.0.0.1", () => r()));
  silentPort = (silent.address() as AddressInfo).port;
  const encoder = new TextEncoder();
  http = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/sse-then-silence")
        return new Response(new ReadableStream({ start: (c) => c.enqueue(encoder.encode("data: first\n\n")) }), {
          headers: { "content-type": "text/event-stream" },
        });
      if (path === "/sse-chatty") {
        // Longer in all than the idle bound, but never silent for long: a bound on silence lets it through.
        let n = 0;
        return new Response(
          new ReadableStream({
            async pull(c) {
              await Bun.sleep(100);
              if (++n > 15) c.close();
              else c.enqueue(encoder.encode(n % 3 ? ": keep-alive\n\n" : `data: ${n}\n\n`));
            },
          }),
          { headers: { "content-type": "text/event-stream" } },
        );
      }
      if (path === "/json-never-ends")
        return new Response(new ReadableStream({ start: (c) => c.enqueue(encoder.encode('{"partial":')) }), {
          headers: { "content-type": "application/json" },
        });
      return Response.json({ ok: true });
    },
  });
});
afterAll(() => {
  for (const s of held) s.destroy();
  silent.close();
  http.stop(true);
});

const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe("withDeadlines", () => {
  it("a host that takes no connection: 'connect', with the connect timeout", async () => {
    const python = Bun.which("python3");
    expect(python, "python3 is needed to hold a listen queue full").toBeTruthy();
    // listen(0) and never accept: one connection waits in the queue, the next SYN is dropped.
    const holder = Bun.spawn(
      [
        python!,
        "-c",
        "import socket,sys,time\ns=socket.socket();s.bind(('127.0.0.1',0));s.listen(0)\nprint(s.getsockname()[1],flush=True)\nc=socket.create_connection(('127.0.0.1',s.getsockname()[1]))\nsys.stdin.read()",
      ],
      { stdin: "pipe", stdout: "pipe" },
    );
    try {
      const reader = holder.stdout.getReader();
      const port = Number(new TextDecoder().decode((await reader.read()).value).trim());
      const call = withDeadlines(plain, quick, false);
      const err = await failure(call(`http://127.0.0.1:${port}/`, {}));
      expect(err).toBeInstanceOf(PeerTimeoutError);
      expect(err).toMatchObject({
        step: "connect",
        seconds: 0.5,
        message: `cannot reach http://127.0.0.1:${port}: no connection within 0.5 s (the host does not answer: it is down, or a firewall drops the packets)`,
      });
    } finally {
      holder.kill();
    }
  });

  it("a port that takes the connection and stays silent, with a handshake signal: 'handshake'", async () => {
    const call = withDeadlines(
      (url, init) => fetch(url, { ...init, tls: { rejectUnauthorized: false } } as RequestInit),
      quick,
      true,
    );
    const err = await failure(call(`https://127.0.0.1:${silentPort}/`, {}));
    expect(err).toMatchObject({ name: "PeerTimeoutError", step: "handshake", seconds: 0.5 });
  });

  it("the same port without a handshake signal: connect, handshake and answer as one, called the answer", async () => {
    const err = await failure(withDeadlines(plain, quick, false)(`https://127.0.0.1:${silentPort}/`, {}));
    expect(err).toMatchObject({ step: "answer", seconds: 1 });
  });

  it("an answer whose body never ends: 'answer', raised where the body is read", async () => {
    const res = await withDeadlines(plain, quick, false)(`http://127.0.0.1:${http.port}/json-never-ends`, {});
    expect(res.status).toBe(200);
    expect(await failure(res.text())).toMatchObject({ step: "answer" });
  });

  it("an event stream that goes silent: 'stream' after the idle bound, once what came was read", async () => {
    const res = await withDeadlines(plain, quick, false)(`http://127.0.0.1:${http.port}/sse-then-silence`, {});
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("data: first\n\n");
    expect(await failure(reader.read())).toMatchObject({
      step: "stream",
      seconds: 1,
      message: expect.stringContaining("sent nothing on its stream for 1 s"),
    });
  });

  it("an event stream that keeps talking runs past the idle bound to its end", async () => {
    const res = await withDeadlines(plain, quick, false)(`http://127.0.0.1:${http.port}/sse-chatty`, {});
    expect((await res.text()).match(/data: \d+/g)).toEqual(["data: 3", "data: 6", "data: 9", "data: 12", "data: 15"]);
  });

  it("the caller's own abort is passed on as it is, not as a timeout", async () => {
    const abort = new AbortController();
    const pending = failure(
      withDeadlines(
        plain,
        DEFAULT_PEER_TIMEOUTS,
        false,
      )(`http://127.0.0.1:${http.port}/sse-then-silence`, { signal: abort.signal }).then((r) => r.text()),
    );
    abort.abort();
    const err = await pending;
    expect(err).not.toBeInstanceOf(PeerTimeoutError);
    expect((err as Error).name).toBe("AbortError");
  });

  it("a quick answer is untouched: status, headers, body", async () => {
    const res = await withDeadlines(plain, quick, false)(`http://127.0.0.1:${http.port}/ok`, {});
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(await res.json()).toEqual({ ok: true });
  });
});
