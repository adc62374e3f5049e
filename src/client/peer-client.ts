import type {
  AgentCard,
  GetTaskParams,
  ListTasksParams,
  ListTasksResult,
  SendMessageParams,
  SendMessageResult,
  StreamResponse,
  Task,
} from "../protocol/types";
import { CURRENT_PROTOCOL_VERSION } from "../protocol/types";

/** The protocol generation a peer speaks, as its agent card says. */
export type PeerProtocol = "1.0" | "0.3";

/** The A2A bindings this client speaks (spec §5: JSON-RPC, gRPC, HTTP+JSON), as a card's protocolBinding names them. */
export type PeerBinding = "JSONRPC" | "HTTP+JSON" | "GRPC";

/**
 * What `send` and `status` do with a peer, whichever binding it speaks (JsonRpcClient, HttpJsonClient,
 * GrpcPeerClient).
 */
export interface PeerClient {
  readonly binding: PeerBinding;
  /** The protocol generation spoken: HTTP+JSON and gRPC are always 1.0; JSON-RPC may be 0.3 for an older peer. */
  readonly protocol: PeerProtocol;
  sendMessage(params: SendMessageParams, signal?: AbortSignal): Promise<SendMessageResult>;
  sendStreamingMessage(params: SendMessageParams, signal?: AbortSignal): AsyncIterable<StreamResponse>;
  /** `opened` is called once the server took the subscription (its event stream began), before any event. */
  subscribeToTask(id: string, signal?: AbortSignal, opened?: () => void): AsyncIterable<StreamResponse>;
  getTask(params: GetTaskParams, signal?: AbortSignal): Promise<Task>;
  listTasks(params: ListTasksParams, signal?: AbortSignal): Promise<ListTasksResult>;
  cancelTask(id: string, signal?: AbortSignal): Promise<Task>;
}

/** How the client reaches a server: a fetch that already carries the TLS identity and pinning. */
export type FetchFn = (url: string, init: RequestInit) => Promise<Response>;

/** An error the remote agent answered with: a JSON-RPC error object, or an HTTP+JSON one read as such. */
export class RemoteError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = "RemoteError";
  }
}

/** The server answered, but not in A2A (wrong URL, a proxy page, ...). */
export class ProtocolError extends Error {}

/** The agent card at `baseUrl` (the well-known path), whichever binding the agent speaks. */
export async function fetchAgentCard(fetchFn: FetchFn, baseUrl: string, signal?: AbortSignal): Promise<AgentCard> {
  const res = await fetchFn(new URL("/.well-known/agent-card.json", baseUrl).toString(), {
    headers: { accept: "application/json", "a2a-version": CURRENT_PROTOCOL_VERSION },
    signal,
  });
  if (!res.ok) throw new ProtocolError(`agent card request answered HTTP ${res.status}${await refusalOf(res)}`);
  return (await res.json()) as AgentCard;
}

/**
 * The words of an error answer a server gave in a google.rpc.Status body (a node that refuses a revoked
 * certificate says why), for the message; "" when there are none.
 */
async function refusalOf(res: Response): Promise<string> {
  try {
    const body = (await res.json()) as { error?: { message?: unknown } };
    return typeof body?.error?.message === "string" ? `: ${body.error.message.slice(0, 400)}` : "";
  } catch {
    return "";
  }
}
