/**
 * A twin of Hermes Agent's own A2A plugin (`plugins/platforms/a2a` in NousResearch/hermes-agent, Hermes 0.20 and
 * later), server and client, for the tests of a mixed fleet: a2a-node calling a Hermes A2A node as a peer outside
 * the fleet, and Hermes's A2A client calling a2a-node's token listener. Real Python Hermes cannot run here.
 *
 * The stored sources hold two designs of the plugin. This twin follows the dependency-free one ("Stdlib only —
 * no a2a-sdk dependency": http.server + urllib), file by file at these commits:
 * - adapter.py   @ 022a7d69f64112eaab2c5e25b9af8a91b9b8bb29  → ./server.ts (the inbound server)
 * - protocol.py  @ 00067189dfecf833d4d009c2dd977ae85cf800e0  → ./wire.ts (card, tasks, stream frames)
 * - security.py  @ 0445c2476c7509f38250b92d60246d51f4cebdd4  → ./security.ts (tokens, trust, framing, push signing)
 * - tools.py     @ 07ea4300973b2c4857dad084ff949ba33a14eeaa  → ./client.ts (a2a_call, a2a_discover)
 * - README.md    @ 050c8d35d6d8e95d0bb595d14ff65d9198139fe6 and DESIGN.md @ 1d88c5aafb51fa99670510178077fa8047f02386
 *   (port 9900, the env settings, "Stdlib only").
 * The other design (adapter.py @ b7dfac385ed27ddcd80cafcf624e35fc856afde2, server.py, executor.py, client.py, ...:
 * the official a2a-sdk behind uvicorn, loopback only, credentials from `hermes a2a`) is not twinned.
 *
 * Where those files disagree with each other, the twin does what the wire would show: adapter.py passes
 * `history_length` to protocol.py's `TaskStore.to_task`, which at that commit has no such parameter; both
 * render no history, so GetTask/ListTasks ignore `historyLength` here.
 *
 * Every behaviour a peer can see is kept, quirks and refusals included (see each file's header): HTTP/1.0 with
 * one request per connection (./http10.ts), Python's JSON spacing (./py-json.ts), a SendMessage that answers
 * WORKING at once, streams that end with a `: done` comment, the [INPUT_REQUIRED] marker, the anti-loop turn
 * cap, the rate limit, the trust gate, the SSRF guard of push callbacks, the push signature over re-sorted JSON.
 *
 * Left out, as nothing on the wire shows them: the gateway session (the agent is a script, `defaultAgent` or
 * the test's own), the audit log and conversation files, metrics beyond /metrics' shape, the orphan watchdog
 * (5 min), served-agent routing by path or tenant (one default agent), forwarding to other profiles, the
 * credential patterns of agent/redact.py in outbound redaction (e-mail addresses are scrubbed).
 */
export {
  HermesA2AClient,
  type CallResult,
  type ClientExchange,
  type HermesA2AClientOptions,
  type PeerConfig,
} from "./client";
export {
  defaultAgent,
  HermesA2AServer,
  startHermesA2AServer,
  type Agent,
  type AgentAnswer,
  type AgentTurn,
  type HermesA2AServerOptions,
  type SeenRequest,
  type SentPush,
} from "./server";
export { pyDumps } from "./py-json";
export { isSafeCallbackUrl, SecurityContext } from "./security";
export { STATE } from "./wire";
