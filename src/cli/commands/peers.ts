import type { Command } from "../command";
import { commandGroup } from "../command-group";
import { add } from "./peers/add";
import { discover } from "./peers/discover";
import { list } from "./peers/list";
import { ping } from "./peers/ping";
import { remove } from "./peers/remove";
import { show } from "./peers/show";

export const peersCommand: Command = commandGroup({
  name: "peers",
  summary: "manage known peers: add, list, show, remove, discover, ping",
  intro: `Manage the peers this node knows: a name (the fleet name on the peer's certificate, lower case as init-pki
issues it), the URL it serves at, and optionally a pin of its public key, which its renewals keep (a
'pki renew --rekey' there changes it). Kept in HOME/a2a-node.db. A peer is who its fleet certificate names
(it must chain to the fleet CA and carry that name), and, if pinned, must hold the pinned key.

A peer outside the fleet (an A2A agent that knows nothing of our PKI: a hosted agent, an SDK sample, Hermes'
own A2A server) is added with --auth, --token-file, --header-file, --ca or --insecure-http. Its server is
verified by host name against this system's CA store (or the CA in --ca FILE), no client certificate is
presented, and its credentials are read from their file at every call (rotate the token by rewriting the
file). Only the file's path is stored: the token never appears in the database, 'peers list/show', --json
output, logs or error messages. send, status, tasks, cancel and ping work with it as with a fleet peer.

send, status, tasks and cancel speak the binding a peer's card lists first of those they speak: JSON-RPC,
HTTP+JSON, or gRPC (a fleet peer's only; an outside peer's card is read for JSON-RPC and HTTP+JSON). The
peer's own setting decides (preferred_binding on an a2a-node); there is no flag to force one here.`,
  subcommands: [add, discover, ping, list, show, remove],
  commonFlagHelp: "  --json                 one JSON value on one line on stdout",
  exitCodes: `  0 success   1 failure (peer exists; not confirmed)   2 usage error (bad name or URL; discover without a
  terminal and without --yes; a token, header or CA file that cannot be read)   3 no such peer
  4 cannot connect (nothing listens, not TLS, unknown host, no connection or handshake in time)
  5 the peer did not answer in time   8 refused (TLS handshake, a certificate from
  outside the fleet, another node's name, a key that differs from the pin, an agent card that is unsigned or
  not signed by that node; an outside peer that refused the token, 401/403)
`,
});
