import type { Command } from "../command";
import { UsageError } from "../errors";
import { addToken, ADD_FLAGS } from "./tokens/add";
import { listTokens, LIST_FLAGS } from "./tokens/list";
import { revokeToken, REVOKE_FLAGS } from "./tokens/revoke";

export const tokensCommand: Command = {
  name: "tokens",
  summary: "bearer tokens for callers outside the fleet: add, list, revoke",
  help: `Bearer tokens for A2A callers that hold no fleet certificate (Hermes' own A2A tools, scripts, other
agents). They reach this node on the token listener (token_port in config.toml, off by default), sending
'Authorization: Bearer TOKEN'. Each token names its caller: the node knows it as 'token:NAME', which owns the
tasks it creates as a certificate's name does (a token caller never sees a fleet member's tasks, nor another
token caller's). Only the token's SHA-256 is kept, in HOME/a2a-node.db, so a token is shown once, when made.
Adding or revoking takes effect at once on a running node.

USAGE
  a2a-node tokens add NAME [--replace] [--json]
  a2a-node tokens list [--json]
  a2a-node tokens revoke NAME [--json]

SUBCOMMANDS
  add      make a token for caller NAME and print it (on stdout, alone, for a pipe or a file)
  list     the callers that hold a token, and when it was made (never the tokens)
  revoke   forget NAME's token: its next request is answered 401, and a running serve is told
           (SIGHUP) to close the connections it was used on, its open streams with them

FLAGS
  --replace   (add) make a new token for a NAME that has one (the old one stops working)
  --json      one JSON value on one line on stdout (add: includes the token)

EXAMPLES
  a2a-node tokens add hermes > hermes.token && chmod 600 hermes.token
  a2a-node tokens list
  a2a-node tokens revoke hermes

  # config.toml on this node, then restart serve:
  #   token_port = 9445
  #   token_host = "0.0.0.0"      # default 127.0.0.1
  #   token_tls = "on"            # default: TLS with this node's certificate

EXIT CODES
  0 success   1 NAME already has a token (add without --replace)   2 usage error (bad NAME)
  3 no such token (revoke), or no home
`,
  flags: {},
  subcommands: { add: ADD_FLAGS, list: LIST_FLAGS, revoke: REVOKE_FLAGS },
  async run(argv, ctx) {
    const [sub, ...args] = argv;
    switch (sub) {
      case "add":
        return addToken(args, ctx);
      case "list":
        return listTokens(args, ctx);
      case "revoke":
        return revokeToken(args, ctx);
      case undefined:
        throw new UsageError("tokens needs a subcommand: add, list or revoke");
      default:
        throw new UsageError(`unknown tokens subcommand '${sub}' (add, list, revoke)`);
    }
  },
};
