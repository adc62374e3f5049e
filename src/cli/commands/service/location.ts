import { resolve } from "node:path";
import type { CommandContext } from "../../command";
import { UsageError } from "../../errors";

/** The host the service subcommands act on (the real one, or an image under --root) and where the unit goes. */
export async function serviceLocation(user: boolean, root: string | undefined, ctx: CommandContext) {
  if (user && root !== undefined)
    throw new UsageError("--root is for system services; a user service is written under your own home");
  const [{ realHost }, { locate }] = await Promise.all([
    import("../../../service/host"),
    import("../../../service/systemd"),
  ]);
  const host = realHost(ctx.io.env, root === undefined ? "/" : resolve(root));
  return { host, location: locate(user ? "user" : "system", host, ctx.io.env, ctx.home) };
}
