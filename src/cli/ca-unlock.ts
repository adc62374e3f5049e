import { join } from "node:path";
import type { Unlock } from "../../pki/ca-key";
import { MIN_PASSPHRASE } from "../../pki/ca-key";
import { crlValidForMs, DEFAULT_CRL_REFRESH_MS } from "../../pki/crl-validity";
import { loadConfigFile, resolveSettings } from "../config";
import { homePaths, type HomePaths } from "../home";
import type { CommandContext } from "./command";
import { CliError, ExitCode } from "./errors";

/**
 * The CA key's passphrase for a command that signs, asked for only if the key is encrypted, at most once:
 * A2A_NODE_CA_PASSPHRASE, else the config file's ca_passphrase_file, else a prompt at the terminal. Never a flag.
 */
export function caUnlock(ctx: CommandContext): Unlock {
  let asked: Promise<string | undefined> | undefined;
  return () =>
    (asked ??= (async () => {
      const configured = resolveSettings({}, ctx.io.env, loadConfigFile(join(ctx.home, "config.toml"), false)).config
        .caPassphrase;
      if (configured) return configured;
      return ctx.io.askSecret?.("passphrase of the fleet CA key: ");
    })());
}

/**
 * This home's paths, able to open an encrypted CA key, and signing revocation lists valid for as long as this
 * home's serve would (CRL_VALID_REFRESHES of its crl_refresh_seconds; the default when the config is unreadable).
 */
export function caPaths(ctx: CommandContext): HomePaths & { unlock: Unlock; crlValidForMs: number } {
  let refreshMs = DEFAULT_CRL_REFRESH_MS;
  try {
    refreshMs = resolveSettings({}, ctx.io.env, loadConfigFile(join(ctx.home, "config.toml"), false)).config
      .crlRefreshMs;
  } catch {
    // A config file that does not parse is reported by the commands that need it; the list gets the default.
  }
  return { ...homePaths(ctx.home), unlock: caUnlock(ctx), crlValidForMs: crlValidForMs(refreshMs) };
}

/** A new passphrase for the CA key: A2A_NODE_CA_PASSPHRASE, or typed twice at the terminal. */
export async function newPassphrase(ctx: CommandContext): Promise<string> {
  const fromEnv = ctx.io.env.A2A_NODE_CA_PASSPHRASE;
  if (fromEnv) return fromEnv;
  if (!ctx.io.askSecret)
    throw new CliError(
      "no passphrase for the CA key: set A2A_NODE_CA_PASSPHRASE, or run this in a terminal",
      ExitCode.Usage,
    );
  const first = await ctx.io.askSecret(`new passphrase for the fleet CA key (at least ${MIN_PASSPHRASE} characters): `);
  const second = await ctx.io.askSecret("the same again: ");
  if (first !== second)
    throw new CliError("the two passphrases differ; nothing was changed", ExitCode.Failure, "run it again");
  return first;
}
