/**
 * Readiness for systemd (the unit is Type=notify). Bun has no unix datagram sockets, so the node cannot write
 * READY=1 to $NOTIFY_SOCKET itself; it runs `systemd-notify --ready` once it listens, which the unit lets any
 * of its processes send (NotifyAccess=all). systemd-notify waits until systemd has taken the message (its
 * default since systemd 246), so the notifier exiting first cannot lose it.
 */
export interface NotifyLog {
  warn(message: string, fields?: Record<string, unknown>): void;
}

/** Tells systemd the node is ready, if systemd is waiting for that; resolves once it is told (or cannot be). */
export async function notifyReady(
  env: Record<string, string | undefined>,
  status: string,
  log: NotifyLog,
): Promise<void> {
  if (!env.NOTIFY_SOCKET) return;
  const why =
    "systemd waits for readiness (NOTIFY_SOCKET is set) but could not be told; it will stop the service at its start timeout";
  try {
    const p = Bun.spawn(["systemd-notify", "--ready", `--status=${status}`], {
      env: env as Record<string, string>,
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
    });
    const [code, err] = await Promise.all([p.exited, new Response(p.stderr).text()]);
    if (code !== 0) log.warn(why, { reason: `systemd-notify exited ${code}: ${err.trim()}` });
  } catch (err) {
    log.warn(why, { reason: `cannot run systemd-notify: ${(err as Error).message}` });
  }
}
