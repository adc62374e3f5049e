/**
 * The floor: the least a server can do to answer SendMessage over mTLS while knowing who its peer is. Same
 * socket path as a2a-node (node:tls verifying client certificates, the peer CN read once per connection,
 * sockets handed to node:http), same answer shape (a completed Task echoing the text), but no validation
 * beyond what the echo needs, no task runner and no storage.
 *
 *   bun scripts/bench/bare-echo-server.ts PORT BUNDLE_JSON
 * Prints "listening" on stdout once it accepts connections.
 */
import { createServer as createHttpServer } from "node:http";
import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import { randomUUID } from "node:crypto";
import { readBundle } from "./rpc";

const [port, bundlePath] = process.argv.slice(2);
const bundle = readBundle(bundlePath);

const peers = new WeakMap<object, string>();

const http = createHttpServer({ keepAlive: true, keepAliveTimeout: 65_000 }, (req, res) => {
  const peer = peers.get(req.socket);
  if (!peer) return void res.writeHead(403).end();
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    let rpc: any;
    try {
      rpc = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}');
    }
    const message = rpc.params?.message ?? {};
    const text = message.parts?.[0]?.text ?? "";
    const id = randomUUID();
    const contextId = randomUUID();
    const task = {
      id,
      contextId,
      status: { state: "TASK_STATE_COMPLETED", timestamp: new Date().toISOString() },
      history: [{ ...message, taskId: id, contextId }],
      artifacts: [{ artifactId: `${id}-echo`, name: "echo", parts: [{ text }] }],
    };
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", id: rpc.id ?? null, result: { task } }));
  });
});

const tls = createTlsServer({
  cert: bundle.cert,
  key: bundle.key,
  ca: bundle.caCert,
  requestCert: true,
  rejectUnauthorized: true,
});
tls.on("secureConnection", (socket: TLSSocket) => {
  const cn = socket.getPeerCertificate()?.subject?.CN;
  if (!socket.authorized || typeof cn !== "string") return void socket.destroy();
  peers.set(socket, cn);
  http.emit("connection", socket);
});
tls.listen(Number(port), "127.0.0.1", () => console.log("listening"));
