/**
 * Feasibility probe for issue 23 (b): @grpc/grpc-js on Bun as a server and as a client, over TLS with client
 * certificates, with raw bytes as messages (no codegen needed to see the transport work). Run:
 *   bun test/grpc/feasibility/grpc-js.ts   (and compiled, see node-http2.ts)
 */
import * as grpc from "@grpc/grpc-js";
import { probeCerts, Verdicts, withTimeout } from "./certs";

const certs = await probeCerts();
const v = new Verdicts();
const raw = { serialize: (b: Buffer) => b, deserialize: (b: Buffer) => b };
const service: grpc.ServiceDefinition = {
  Echo: {
    path: "/probe.Probe/Echo",
    requestStream: false,
    responseStream: false,
    requestSerialize: raw.serialize,
    requestDeserialize: raw.deserialize,
    responseSerialize: raw.serialize,
    responseDeserialize: raw.deserialize,
  },
  Count: {
    path: "/probe.Probe/Count",
    requestStream: false,
    responseStream: true,
    requestSerialize: raw.serialize,
    requestDeserialize: raw.deserialize,
    responseSerialize: raw.serialize,
    responseDeserialize: raw.deserialize,
  },
};

const server = new grpc.Server();
server.addService(service, {
  Echo(call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) {
    const auth = call.getAuthContext?.();
    const cn = auth?.sslPeerCertificate?.subject?.CN;
    if (!cn) console.log(`  (getAuthContext() = ${JSON.stringify(auth)?.slice(0, 200)})`);
    const md = new grpc.Metadata();
    md.set("x-caller", String(cn));
    md.set("x-version", String(call.metadata.get("a2a-version")[0]));
    call.sendMetadata(md);
    done(null, call.request);
  },
  Count(call: grpc.ServerWritableStream<Buffer, Buffer>) {
    for (let i = 0; i < 3; i++) call.write(Buffer.from([i]));
    call.end();
  },
});
const creds = grpc.ServerCredentials.createSsl(
  Buffer.from(certs.ca),
  [{ cert_chain: Buffer.from(certs.server.cert), private_key: Buffer.from(certs.server.key) }],
  true,
);
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync("127.0.0.1:0", creds, (e, p) => (e ? reject(e) : resolve(p))),
);

const Client = grpc.makeGenericClientConstructor(service, "Probe");
const clientCreds = grpc.credentials.createSsl(
  Buffer.from(certs.ca),
  Buffer.from(certs.client.key),
  Buffer.from(certs.client.cert),
);
const client = new Client(`127.0.0.1:${port}`, clientCreds, {
  "grpc.ssl_target_name_override": "localhost",
}) as unknown as grpc.Client & {
  Echo: (
    req: Buffer,
    md: grpc.Metadata,
    opts: grpc.CallOptions,
    cb: (e: grpc.ServiceError | null, r?: Buffer) => void,
  ) => grpc.ClientUnaryCall;
  Count: (req: Buffer) => grpc.ClientReadableStream<Buffer>;
};

await v.check("grpc-js server + client on Bun, TLS with client certificates, unary", async () => {
  const md = new grpc.Metadata();
  md.set("a2a-version", "1.0");
  let headers: grpc.Metadata | undefined;
  const reply = await withTimeout(
    new Promise<Buffer>((resolve, reject) => {
      const call = client.Echo(Buffer.from("hi"), md, {}, (e, r) => (e ? reject(e) : resolve(r!)));
      call.on("metadata", (m) => (headers = m));
    }),
  );
  const caller = headers?.get("x-caller")[0];
  if (reply.toString() !== "hi") throw new Error(`reply ${reply}`);
  if (caller !== "caller") throw new Error(`server saw caller ${caller}`);
  return `echo ok, server saw CN=${caller}, a2a-version=${headers?.get("x-version")[0]}`;
});

await v.check("grpc-js server streaming on Bun", async () => {
  const got = await withTimeout(
    new Promise<number[]>((resolve, reject) => {
      const out: number[] = [];
      const s = client.Count(Buffer.alloc(0));
      s.on("data", (b: Buffer) => out.push(b[0]));
      s.on("end", () => resolve(out));
      s.on("error", reject);
    }),
  );
  if (got.join() !== "0,1,2") throw new Error(`got ${got.join()}`);
  return `messages ${got.join()}`;
});

await v.check("grpc-js client without a certificate is refused", async () => {
  const anon = new Client(`127.0.0.1:${port}`, grpc.credentials.createSsl(Buffer.from(certs.ca)), {
    "grpc.ssl_target_name_override": "localhost",
  }) as unknown as typeof client;
  try {
    await withTimeout(
      new Promise<Buffer>((resolve, reject) =>
        anon.Echo(Buffer.from("x"), new grpc.Metadata(), { deadline: Date.now() + 3000 }, (e, r) =>
          e ? reject(e) : resolve(r!),
        ),
      ),
    );
  } catch (e) {
    return `refused: ${(e as grpc.ServiceError).code} ${(e as Error).message.slice(0, 120)}`;
  } finally {
    anon.close();
  }
  throw new Error("an anonymous call succeeded");
});

client.close();
server.forceShutdown();
console.log(v.failed ? `${v.failed} piece(s) failed` : "all pieces work");
process.exit(v.failed ? 1 : 0);
