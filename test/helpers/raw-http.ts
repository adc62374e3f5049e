/**
 * HTTP/1.1 by hand on one connection (TLS or plain), for what fetch cannot do: pipeline thousands of requests
 * on one keep-alive connection (a flood), choose the source address, or keep one connection open to ask on it
 * later (while the node can accept no new one).
 */
import { connect as tcpConnect, type Socket } from "node:net";
import { connect as tlsConnect, type ConnectionOptions } from "node:tls";
import type { TlsIdentity } from "./fleet";

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawConnection {
  /** Sends `requests` (whole requests, as text) at once and resolves with their answers, in order. */
  send(requests: string[]): Promise<RawAnswer[]>;
  close(): void;
}

/** Opens a connection to `url` (https: TLS, presenting `tls` when given; http: plain), from `from` if set. */
export async function rawConnection(
  url: string,
  o: { tls?: Partial<TlsIdentity>; from?: string } = {},
): Promise<RawConnection> {
  const u = new URL(url);
  const host = u.hostname.replace(/^\[|\]$/g, "");
  const port = Number(u.port);
  const s: Socket =
    u.protocol === "https:"
      ? tlsConnect({
          host,
          port,
          localAddress: o.from,
          ...o.tls,
          rejectUnauthorized: o.tls?.ca !== undefined,
          servername: "localhost",
        } as ConnectionOptions)
      : tcpConnect({ host, port, localAddress: o.from });
  await new Promise<void>((resolve, reject) => {
    s.once(u.protocol === "https:" ? "secureConnect" : "connect", () => resolve());
    s.once("error", reject);
  });
  let buf = Buffer.alloc(0);
  let waiting: { want: number; got: RawAnswer[]; resolve(a: RawAnswer[]): void; reject(e: Error): void } | undefined;
  const parse = () => {
    while (waiting && waiting.got.length < waiting.want) {
      const end = buf.indexOf("\r\n\r\n");
      if (end === -1) return;
      const head = buf.toString("latin1", 0, end).split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of head.slice(1)) {
        const c = line.indexOf(":");
        headers[line.slice(0, c).toLowerCase()] = line.slice(c + 1).trim();
      }
      const length = Number(headers["content-length"] ?? 0);
      if (buf.length < end + 4 + length) return;
      waiting.got.push({
        status: Number(head[0].split(" ")[1]),
        headers,
        body: buf.toString("utf8", end + 4, end + 4 + length),
      });
      buf = buf.subarray(end + 4 + length);
    }
    if (waiting && waiting.got.length === waiting.want) {
      const w = waiting;
      waiting = undefined;
      w.resolve(w.got);
    }
  };
  s.on("data", (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    parse();
  });
  s.on("error", () => {});
  s.on("close", () =>
    waiting?.reject(new Error(`the connection closed after ${waiting.got.length} of ${waiting.want} answers`)),
  );
  return {
    send(requests) {
      return new Promise((resolve, reject) => {
        waiting = { want: requests.length, got: [], resolve, reject };
        s.write(requests.join(""));
      });
    },
    close: () => s.destroy(),
  };
}

/** One request's text: `body` as JSON when given. */
export function requestText(
  method: string,
  path: string,
  o: { host?: string; headers?: Record<string, string>; body?: string } = {},
): string {
  const extra = Object.entries(o.headers ?? {})
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  const body = o.body ?? "";
  const framing = body ? `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` : "";
  return `${method} ${path} HTTP/1.1\r\nhost: ${o.host ?? "localhost"}\r\n${extra}${framing}\r\n${body}`;
}
