/**
 * Runs a script in a network namespace of its own (unshare -n), with the IPv6 prefixes 2001:db8:1::/64 and
 * 2001:db8:2::/64 routed to its loopback and non-local binds allowed, so one process can connect from any
 * address of those /64s: what a host holding a whole /64 can do, which the machine's own interfaces cannot
 * show. Nothing outside the namespace changes. Needs unshare(1), ip(8) and sysctl(8), and the right to make
 * a namespace (root in a container); namespaceProblem() says why not, where it cannot.
 */
const SETUP = [
  "ip link set lo up",
  "ip -6 route add local 2001:db8:1::/64 dev lo",
  "ip -6 route add local 2001:db8:2::/64 dev lo",
  "sysctl -qw net.ipv6.ip_nonlocal_bind=1",
  'exec "$0" "$@"',
].join(" && ");

/** Undefined when namespaces work here; otherwise what failed. */
export function namespaceProblem(): string | undefined {
  const r = Bun.spawnSync(["unshare", "-n", "sh", "-c", SETUP, "true"], { stdout: "pipe", stderr: "pipe" });
  return r.exitCode === 0
    ? undefined
    : `unshare -n with IPv6 routes failed (exit ${r.exitCode}): ${r.stderr.toString().trim()}`;
}

/** Runs `bun SCRIPT ARGS...` in a fresh namespace; resolves with its exit code and output. */
export async function runInNamespace(
  script: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(["unshare", "-n", "sh", "-c", SETUP, process.execPath, script, ...args], {
    stdout: "pipe",
    stderr: "pipe",
    env: process.env,
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}
