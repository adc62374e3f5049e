/**
 * Feasibility probe for issue 23 (a): what Bun's node:http2 gives a gRPC binding. Run with
 *   bun test/grpc/feasibility/node-http2.ts
 * or compiled: bun build --compile test/grpc/feasibility/node-http2.ts --outfile /tmp/h2probe && /tmp/h2probe
 * Prints PASS/FAIL per piece; exits 1 if any piece fails.
 */
import http2 from "node:http2";
import https from "node:https";
import type { TLSSocket } from "node:tls";
import type { AddressInfo } from "node:net";
import { probeCerts, Verdicts, withTimeout } from "./certs";

const certs = await probeCerts();
const v = new Verdicts();

// One secure server: client certificates required, h2 and http/1.1 by ALPN on the same port.
const seen: { cn?: string; alpn?: string; version?: string }[] = [];
const secure = http2.createSecureServer({
  cert: certs.server.cert,
  key: certs.server.key,
  ca: certs.ca,
  requestCert: true,
  rejectUnauthorized: true,
  allowHTTP1: true,
});
secure.on("request", (req, res) => {
  const socket = (req.httpVersion === "2.0" ? req.stream.session?.socket : req.socket) as TLSSocket;
  const cert = socket?.getPeerCertificate?.();
  seen.push({ cn: String(cert?.subject?.CN), alpn: socket?.alpnProtocol || undefined, version: req.httpVersion });
  if (req.url === "/stream") {
    // Server streaming the way gRPC does it: headers, several DATA frames, then trailers.
    res.writeHead(200, { "content-type": "application/grpc" });
    let n = 0;
    const tick = () => {
      if (n === 3) {
        res.addTrailers({ "grpc-status": "0", "grpc-message": "done" });
        res.end();
        return;
      }
      res.write(Buffer.from([0, 0, 0, 0, 1, n++]));
      setImmediate(tick);
    };
    tick();
    return;
  }
  res.end(JSON.stringify({ cn: cert?.subject?.CN, version: req.httpVersion, alpn: socket?.alpnProtocol }));
});
await new Promise<void>((r) => secure.listen(0, "127.0.0.1", r));
const port = (secure.address() as AddressInfo).port;

function h2Request(session: http2.ClientHttp2Session, path: string) {
  return new Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders; chunks: Buffer[] }>(
    (resolve, reject) => {
      const req = session.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc",
        te: "trailers",
      });
      let headers: http2.IncomingHttpHeaders = {};
      let trailers: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      req.on("response", (h) => (headers = h));
      req.on("trailers", (t) => (trailers = t));
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => resolve({ headers, trailers, chunks }));
      req.on("error", reject);
      req.end();
    },
  );
}

const tlsClient = () =>
  http2.connect(`https://127.0.0.1:${port}`, {
    ca: certs.ca,
    cert: certs.client.cert,
    key: certs.client.key,
    servername: "localhost",
  });

await v.check("h2 over TLS: client certificate reaches the handler", async () => {
  const s = tlsClient();
  try {
    const r = await withTimeout(h2Request(s, "/who"));
    const body = JSON.parse(Buffer.concat(r.chunks).toString());
    if (body.cn !== "caller") throw new Error(`peer CN ${JSON.stringify(body.cn)}, wanted "caller"`);
    return `CN=${body.cn} httpVersion=${body.version} alpn=${body.alpn} client-side alpn=${s.alpnProtocol}`;
  } finally {
    s.close();
  }
});

await v.check("h2 over TLS: server streaming and grpc-status trailers", async () => {
  const s = tlsClient();
  try {
    const r = await withTimeout(h2Request(s, "/stream"));
    const bytes = Buffer.concat(r.chunks);
    if (bytes.length !== 18) throw new Error(`got ${bytes.length} body bytes, wanted 18`);
    if (r.trailers["grpc-status"] !== "0") throw new Error(`trailers ${JSON.stringify(r.trailers)}`);
    return `3 messages, trailers grpc-status=${r.trailers["grpc-status"]} grpc-message=${r.trailers["grpc-message"]}`;
  } finally {
    s.close();
  }
});

await v.check("http/1.1 on the same port (allowHTTP1), client certificate seen", async () => {
  const body = await withTimeout(
    new Promise<string>((resolve, reject) => {
      const req = https.request(
        // ALPNProtocols is a TLS option https.request passes through; its RequestOptions type omits it.
        {
          host: "127.0.0.1",
          port,
          path: "/who",
          method: "GET",
          ALPNProtocols: ["http/1.1"],
          ca: certs.ca,
          cert: certs.client.cert,
          key: certs.client.key,
          servername: "localhost",
        } as https.RequestOptions,
        (res) => {
          let b = "";
          res.on("data", (c) => (b += c));
          res.on("end", () => resolve(b));
        },
      );
      req.on("error", reject);
      req.end();
    }),
  );
  const parsed = JSON.parse(body);
  if (parsed.version !== "1.1" || parsed.cn !== "caller") throw new Error(`answer ${body}`);
  return `httpVersion=${parsed.version} CN=${parsed.cn} alpn=${parsed.alpn}`;
});

await v.check("h2 over TLS without a client certificate is refused at the handshake", async () => {
  const before = seen.length;
  const s = http2.connect(`https://127.0.0.1:${port}`, { ca: certs.ca, servername: "localhost" });
  s.on("error", () => {});
  try {
    await withTimeout(h2Request(s, "/who"));
  } catch (e) {
    if (seen.length !== before) throw new Error("the handler ran");
    return `refused (${e instanceof Error ? e.message : String(e)}), handler not reached`;
  } finally {
    s.destroy();
  }
  throw new Error("the request succeeded without a certificate");
});

// h2c: plaintext HTTP/2 with prior knowledge, as gRPC clients use on an insecure channel.
const plain = http2.createServer();
plain.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
  stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
  stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
  stream.end(Buffer.from([0, 0, 0, 0, 2, 7, 7]));
  void headers;
});
await new Promise<void>((r) => plain.listen(0, "127.0.0.1", r));
const plainPort = (plain.address() as AddressInfo).port;

await v.check("h2c server (stream API, waitForTrailers)", async () => {
  const s = http2.connect(`http://127.0.0.1:${plainPort}`);
  try {
    const r = await withTimeout(h2Request(s, "/x"));
    if (r.trailers["grpc-status"] !== "0" || Buffer.concat(r.chunks).length !== 7) throw new Error(JSON.stringify(r));
    return `content-type=${r.headers["content-type"]} grpc-status=${r.trailers["grpc-status"]}`;
  } finally {
    s.close();
  }
});

await v.check("peer certificate from the stream API (stream.session.socket)", async () => {
  const secure2 = http2.createSecureServer({
    cert: certs.server.cert,
    key: certs.server.key,
    ca: certs.ca,
    requestCert: true,
  });
  secure2.on("stream", (stream: http2.ServerHttp2Stream) => {
    const cn = (stream.session?.socket as TLSSocket).getPeerCertificate().subject?.CN;
    stream.respond({ ":status": 200 }, { waitForTrailers: true });
    stream.on("wantTrailers", () => stream.sendTrailers({ "x-cn": String(cn) }));
    stream.end();
  });
  await new Promise<void>((r) => secure2.listen(0, "127.0.0.1", r));
  const p2 = (secure2.address() as AddressInfo).port;
  const s = http2.connect(`https://127.0.0.1:${p2}`, {
    ca: certs.ca,
    cert: certs.client.cert,
    key: certs.client.key,
    servername: "localhost",
  });
  try {
    const r = await withTimeout(h2Request(s, "/who"));
    if (r.trailers["x-cn"] !== "caller") throw new Error(`x-cn=${r.trailers["x-cn"]}`);
    return `CN=${r.trailers["x-cn"]}`;
  } finally {
    s.close();
    secure2.close();
  }
});

secure.close();
plain.close();
console.log(v.failed ? `${v.failed} piece(s) failed` : "all pieces work");
process.exit(v.failed ? 1 : 0);
