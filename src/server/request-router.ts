import type { IncomingMessage, ServerResponse } from "node:http";
import type { CallerIdentity } from "../protocol/caller";
import { A2AError } from "../protocol/errors";
import { errorBody, type JsonRpcTransport } from "../protocol/jsonrpc-transport";

/** Paths that take JSON-RPC POSTs: the interface URL named in the agent card, and the legacy Hermes path. */
export const JSONRPC_PATH = "/";
const JSONRPC_PATHS = new Set([JSONRPC_PATH, "/a2a/rpc"]);

export interface RouterOptions {
  transport: JsonRpcTransport;
  /** Everything that is not a JSON-RPC POST (card, health, OpenAPI) goes to the web app. */
  web(request: Request, caller: CallerIdentity): Promise<Response>;
  maxBodyBytes: number;
}

/**
 * Splits traffic between the JSON-RPC transport and the web app. JSON-RPC POSTs, the per-task hot path, go
 * straight from the socket to the transport: turning them into Fetch Requests and back would cost more than
 * the rest of the node's work on a task. Everything else goes through the web app (Elysia).
 */
export function createRequestRouter(options: RouterOptions) {
  const { transport, web, maxBodyBytes } = options;

  return function route(req: IncomingMessage, res: ServerResponse, caller: CallerIdentity): void {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    if (req.method === "POST" && JSONRPC_PATHS.has(path)) {
      const version = headerOrQuery(req, url, q);
      readBody(req, maxBodyBytes).then(
        async (body) => {
          const out = await transport.handle(body, version, { caller });
          // A known length lets the head and body leave in one write, without chunked framing.
          res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(out) }).end(out);
        },
        (err: BodyError) => {
          // Answer first, then drop the connection (the unread rest of the body makes it unusable).
          const out = errorBody(null, A2AError.invalidRequest(err.message));
          res.writeHead(err.status, {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(out),
            connection: "close",
          });
          res.end(out, () => req.destroy());
        },
      );
      return;
    }
    void toFetch(req, url, maxBodyBytes)
      .then((request) => web(request, caller))
      .then((response) => writeResponse(res, response))
      .catch((err) => {
        if (err instanceof BodyError) res.writeHead(err.status).end(err.message);
        else {
          console.error("a2a-node: web request failed:", err);
          if (!res.headersSent) res.writeHead(500).end();
          else res.destroy();
        }
      });
  };
}

function headerOrQuery(req: IncomingMessage, url: string, q: number): string | null {
  const h = req.headers["a2a-version"];
  if (typeof h === "string" && h !== "") return h;
  if (q !== -1) return new URLSearchParams(url.slice(q + 1)).get("A2A-Version");
  return h === undefined ? null : "";
}

class BodyError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    if (declared > limit) {
      reject(new BodyError(413, `request body of ${declared} bytes exceeds this node's limit of ${limit} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners("data");
        reject(new BodyError(413, `request body exceeds this node's limit of ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(chunks.length === 1 ? chunks[0].toString("utf8") : Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

async function toFetch(req: IncomingMessage, url: string, limit: number): Promise<Request> {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const x of v) headers.append(k, x);
    else headers.set(k, v);
  }
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  const body = hasBody ? await readBody(req, limit) : undefined;
  // A fixed origin: the client's Host header must not steer routing (Elysia finds the path by position).
  return new Request(`https://localhost${url}`, { method: req.method, headers, body });
}

async function writeResponse(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((v, k) => (headers[k] = v));
  const body = Buffer.from(await response.arrayBuffer());
  res.writeHead(response.status, headers).end(body);
}
