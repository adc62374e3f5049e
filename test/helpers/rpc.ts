import type { TlsIdentity } from "./fleet";

export interface RpcReply {
  status: number;
  body: any;
  text: string;
  headers: Headers;
}

/** POSTs a raw body to a node's JSON-RPC endpoint over mTLS; the test controls every byte and header. */
export async function post(
  url: string,
  who: TlsIdentity | undefined,
  body: string,
  headers: Record<string, string> = { "a2a-version": "1.0" },
): Promise<RpcReply> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
    tls: who ? { cert: who.cert, key: who.key, ca: who.ca } : undefined,
  } as RequestInit);
  return reply(res);
}

/** A response as tests read it: status, headers, raw text, and the JSON body when it is JSON. */
export async function reply(res: Response): Promise<RpcReply> {
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, text, headers: res.headers };
}

let next = 1;
/** One well-formed JSON-RPC call (A2A-Version: 1.0). */
export function rpc(
  url: string,
  who: TlsIdentity,
  method: string,
  params: unknown,
  headers?: Record<string, string>,
): Promise<RpcReply> {
  return post(url, who, JSON.stringify({ jsonrpc: "2.0", id: next++, method, params }), headers);
}

export function userMessage(text: string, extra: Record<string, unknown> = {}) {
  return { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }], ...extra };
}

/** GET over mTLS. */
export async function get(url: string, who: TlsIdentity | undefined): Promise<RpcReply> {
  return reply(
    await fetch(url, { tls: who ? { cert: who.cert, key: who.key, ca: who.ca } : undefined } as RequestInit),
  );
}
