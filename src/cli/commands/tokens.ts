import type { Command } from "../command";
import { commandGroup } from "../command-group";
import { add } from "./tokens/add";
import { list } from "./tokens/list";
import { revoke } from "./tokens/revoke";

export const tokensCommand: Command = commandGroup({
  name: "tokens",
  summary: "bearer tokens for callers outside the fleet: add, list, revoke",
  intro: `Bearer tokens for A2A callers that hold no fleet certificate (Hermes' own A2A tools, scripts, other
agents). They reach this node on the token listener (token_port in config.toml, off by default), sending
'Authorization: Bearer TOKEN'. Each token names its caller: the node knows it as 'token:NAME', which owns the
tasks it creates as a certificate's name does (a token caller never sees a fleet member's tasks, nor another
token caller's). Only the token's SHA-256 is kept, in HOME/a2a-node.db, so a token is shown once, when made.
Adding or revoking takes effect at once on a running node.`,
  subcommands: [add, list, revoke],
  commonFlagHelp: "  --json      one JSON value on one line on stdout (add: includes the token)",
  notes: `  The token listener, in config.toml on this node (then restart serve):
    token_port = 9445
    token_host = "0.0.0.0"      # default 127.0.0.1
    token_tls = "on"            # default: TLS with this node's certificate`,
  exitCodes: `  0 success   1 NAME already has a token (add without --replace)   2 usage error (bad NAME)
  3 no such token (revoke), or no home`,
});
