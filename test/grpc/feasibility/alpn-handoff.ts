/**
 * Feasibility probe for issue 23 (a), the way our listeners are built: the mTLS listener is a node:tls server
 * with our own HTTP/1.1 parser (src/server/mtls-listener.ts), and the plain listener a node:net server. Can a
 * connection be handed to a node:http2 server after we have looked at it?
 *   1. node:tls with ALPNProtocols [h2, http/1.1]; on secureConnection an h2 socket goes to
 *      http2.createServer() by emit("connection", socket); the identity is read from the TLS socket first.
 *   2. node:net: the first bytes are the h2c preface ("PRI * HTTP/2.0"), unshifted, then handed over the same way.
 * Run: bun test/grpc/feasibility/alpn-handoff.ts (also compiled). Exit 1 if a piece fails.
 */
import http2 from "node:http2";
import net, { type AddressInfo } from "node:net";
import tls, { type TLSSocket } from "node:tls";
import { probeCerts, Verdicts, withTimeout } from "./certs";

const certs = await probeCerts();
const v = new Verdicts();
const callers = new WeakMap<object, string>();
const CALLER = Symbol("caller");

const h2 = http2.createServer();
h2.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
  // Bun hands the session a wrapper, not the socket we emitted: look the identity up by a property on it.
  const socket = stream.session?.socket as (TLSSocket & { [CALLER]?: string }) | undefined;
  const caller = socket?.[CALLER] ?? callers.get(socket ?? {}) ?? "anonymous";
  const direct = typeof socket?.getPeerCertificate === "function" ? socket.getPeerCertificate()?.subject?.CN : "n/a";
  console.log(
    `  (session.socket: same object=${callers.has(socket ?? {})} symbol=${socket?.[CALLER]} getPeerCertificate CN=${direct})`,
  );
  stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
  stream.on("wantTrailers", () =>
    stream.sendTrailers({ "grpc-status": "0", "x-caller": caller, "x-path": String(headers[":path"]) }),
  );
  stream.end(Buffer.from([0, 0, 0, 0, 0]));
});

const tlsServer = tls.createServer({
  cert: certs.server.cert,
  key: certs.server.key,
  ca: certs.ca,
  requestCert: true,
  rejectUnauthorized: true,
  ALPNProtocols: ["h2", "http/1.1"],
});
tlsServer.on("secureConnection", (socket: TLSSocket) => {
  if (socket.alpnProtocol === "h2") {
    const cn = String(socket.getPeerCertificate().subject?.CN);
    callers.set(socket, cn);
    (socket as TLSSocket & { [CALLER]?: string })[CALLER] = cn;
    h2.emit("connection", socket);
    return;
  }
  // Stands in for our HTTP/1.1 parser.
  socket.once("data", () => socket.end(`HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nh1`));
});
await new Promise<void>((r) => tlsServer.listen(0, "127.0.0.1", r));
const tlsPort = (tlsServer.address() as AddressInfo).port;

const PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const plainServer = net.createServer((socket) => {
  socket.once("data", (first: Buffer) => {
    socket.pause();
    socket.unshift(first);
    if (first.subarray(0, 14).toString("latin1") === PREFACE.slice(0, 14)) {
      h2.emit("connection", socket);
      socket.resume();
      return;
    }
    socket.resume();
    socket.once("data", () => socket.end(`HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nh1`));
  });
});
await new Promise<void>((r) => plainServer.listen(0, "127.0.0.1", r));
const plainPort = (plainServer.address() as AddressInfo).port;

function call(session: http2.ClientHttp2Session) {
  return new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
    const req = session.request({
      ":method": "POST",
      ":path": "/lf.a2a.v1.A2AService/GetTask",
      "content-type": "application/grpc",
      te: "trailers",
    });
    let trailers: http2.IncomingHttpHeaders = {};
    req.on("trailers", (t) => (trailers = t));
    req.on("data", () => {});
    req.on("end", () => resolve(trailers));
    req.on("error", reject);
    req.end(Buffer.from([0, 0, 0, 0, 0]));
  });
}

await v.check("node:tls ALPN h2 -> http2 server by emit('connection'), identity from the TLS socket", async () => {
  const s = http2.connect(`https://127.0.0.1:${tlsPort}`, {
    ca: certs.ca,
    cert: certs.client.cert,
    key: certs.client.key,
    servername: "localhost",
  });
  try {
    const t = await withTimeout(call(s));
    if (t["x-caller"] !== "caller" || t["grpc-status"] !== "0") throw new Error(JSON.stringify(t));
    return `alpn=${s.alpnProtocol} caller=${t["x-caller"]} path=${t["x-path"]}`;
  } finally {
    s.close();
  }
});

await v.check("node:tls ALPN http/1.1 on the same port stays with the HTTP/1.1 parser", async () => {
  const answer = await withTimeout(
    new Promise<string>((resolve, reject) => {
      const s = tls.connect(
        {
          host: "127.0.0.1",
          port: tlsPort,
          ca: certs.ca,
          cert: certs.client.cert,
          key: certs.client.key,
          servername: "localhost",
          ALPNProtocols: ["http/1.1"],
        },
        () => {
          s.write("GET / HTTP/1.1\r\nhost: x\r\n\r\n");
        },
      );
      let b = "";
      s.on("data", (c) => (b += c));
      s.on("end", () => resolve(`${s.alpnProtocol} ${b.split("\r\n\r\n")[1]}`));
      s.on("error", reject);
    }),
  );
  if (answer !== "http/1.1 h1") throw new Error(answer);
  return answer;
});

await v.check("node:net h2c prior knowledge -> http2 server after peeking the preface", async () => {
  const s = http2.connect(`http://127.0.0.1:${plainPort}`);
  try {
    const t = await withTimeout(call(s));
    if (t["grpc-status"] !== "0") throw new Error(JSON.stringify(t));
    return `grpc-status=${t["grpc-status"]} caller=${t["x-caller"]}`;
  } finally {
    s.close();
  }
});

await v.check("node:net HTTP/1.1 on the plain port still answered", async () => {
  const answer = await withTimeout(
    new Promise<string>((resolve, reject) => {
      const s = net.connect(plainPort, "127.0.0.1", () => s.write("GET / HTTP/1.1\r\nhost: x\r\n\r\n"));
      let b = "";
      s.on("data", (c) => (b += c));
      s.on("end", () => resolve(b.split("\r\n\r\n")[1]));
      s.on("error", reject);
    }),
  );
  if (answer !== "h1") throw new Error(answer);
  return answer;
});

tlsServer.close();
plainServer.close();
h2.close();
console.log(v.failed ? `${v.failed} piece(s) failed` : "all pieces work");
process.exit(v.failed ? 1 : 0);
