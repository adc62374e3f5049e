import { PeerExistsError } from "../../store/sqlite-peer-registry";
import type { Command } from "../command";
import { openPeers } from "../client-session";
import { CliError, ExitCode, UsageError } from "../errors";
import { parseFlags } from "../flags";

const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;
const FINGERPRINT = /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/i;

const addFlags = {
  fingerprint: { type: "string", value: "SHA256" },
  replace: { type: "boolean" },
} as const;
const listFlags = { json: { type: "boolean" } } as const;
const removeFlags = {} as const;

export const peersCommand: Command = {
  name: "peers",
  summary: "manage known peers: add, list, remove",
  help: `Manage the peers this node knows: a name (the CN on the peer's certificate), the URL it serves at,
and optionally a pinned certificate fingerprint. Kept in HOME/a2a-node.db.

USAGE
  a2a-node peers add NAME URL [--fingerprint SHA256] [--replace]
  a2a-node peers list [--json]
  a2a-node peers remove NAME

FLAGS
  --fingerprint SHA256   pin the peer's certificate (AA:BB:... as 'a2a-node pki show' prints it)
  --replace              overwrite an existing peer of that name
  --json                 list as a JSON array on one line

EXAMPLES
  a2a-node peers add beta https://10.0.0.7:9443
  a2a-node peers list --json
  a2a-node peers remove beta

EXIT CODES
  0 success   1 failure (peer exists)   2 usage error   3 no such peer
`,
  flags: {},
  subcommands: { add: addFlags, list: listFlags, remove: removeFlags },
  async run(argv, { io, home }) {
    const [sub, ...args] = argv;
    switch (sub) {
      case "add": {
        const { flags, positionals } = parseFlags(args, addFlags);
        const [name, url, ...extra] = positionals;
        if (!name || !url || extra.length) throw new UsageError("peers add needs NAME and URL");
        if (!NAME.test(name)) throw new UsageError(`'${name}' is not a valid peer name (letters, digits and '-', as in the certificate CN)`);
        let parsed: URL;
        try {
          parsed = new URL(url);
        } catch {
          throw new UsageError(`'${url}' is not a URL (expected https://HOST:PORT)`);
        }
        if (parsed.protocol !== "https:") throw new UsageError(`peer URL must be https:// (mutual TLS); got '${url}'`);
        if (flags.fingerprint && !FINGERPRINT.test(flags.fingerprint))
          throw new UsageError("--fingerprint must be a SHA-256 fingerprint like AB:CD:... (32 bytes)");
        const { peers, close } = openPeers(home);
        try {
          const peer = peers.add(
            { name, url: parsed.toString().replace(/\/$/, ""), fingerprint: flags.fingerprint?.toUpperCase() },
            { replace: flags.replace },
          );
          io.stdout.write(`added peer ${peer.name} at ${peer.url}${peer.fingerprint ? ` (pinned ${peer.fingerprint})` : ""}\n`);
        } catch (err) {
          if (err instanceof PeerExistsError)
            throw new CliError(err.message, ExitCode.Failure, `pass --replace to point '${name}' at ${url}`);
          throw err;
        } finally {
          close();
        }
        return 0;
      }
      case "list": {
        const { flags, positionals } = parseFlags(args, listFlags);
        if (positionals.length) throw new UsageError(`peers list takes no arguments (got '${positionals[0]}')`);
        const { peers, close } = openPeers(home);
        try {
          const all = peers.list();
          if (flags.json) io.stdout.write(`${JSON.stringify(all)}\n`);
          else if (all.length === 0) io.stdout.write("no peers yet: add one with 'a2a-node peers add NAME URL'\n");
          else {
            const w = Math.max(4, ...all.map((p) => p.name.length));
            io.stdout.write(`${"NAME".padEnd(w)}  URL\n`);
            for (const p of all) io.stdout.write(`${p.name.padEnd(w)}  ${p.url}${p.fingerprint ? `  pinned ${p.fingerprint}` : ""}\n`);
          }
        } finally {
          close();
        }
        return 0;
      }
      case "remove": {
        const { positionals } = parseFlags(args, removeFlags);
        if (positionals.length !== 1) throw new UsageError("peers remove needs exactly one NAME");
        const { peers, close } = openPeers(home);
        try {
          if (!peers.remove(positionals[0]))
            throw new CliError(`no peer named '${positionals[0]}'`, ExitCode.NotFound, "see 'a2a-node peers list'");
          io.stdout.write(`removed peer ${positionals[0]}\n`);
        } finally {
          close();
        }
        return 0;
      }
      case undefined:
        throw new UsageError("peers needs a subcommand: add, list or remove");
      default:
        throw new UsageError(`unknown peers subcommand '${sub}' (add, list, remove)`);
    }
  },
};
