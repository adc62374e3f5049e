/**
 * Run inside a network namespace (netns.ts), by test/e2e/wear-down.test.ts: the compiled binary serves on ::1;
 * 20 addresses of one IPv6 /64 (2001:db8:1::/64) each hold 64 silent TCP connections to it, 1,280 in all,
 * past max_connections (1024); then a fleet member connects from another /64 (2001:db8:2::1) five times.
 * Prints one JSON line: the member's answers and the node's refused-connection counters.
 */
import { connect as tcpConnect, type Socket } from "node:net";
import { connect as tlsConnect, type ConnectionOptions } from "node:tls";
import { once } from "node:events";
import { serveBinary } from "./binary";
import { makeFleet } from "./fleet";

const fleet = await makeFleet(["alpha", "beta"]);
const node = await serveBinary(fleet.homes.alpha, ["--host", "::1", "--executor", "echo", "--admin-port", "0"]);
try {
  const admin = (await node.waitForLine({ msg: /^admin port open/ })).url as string;
  const silent: Socket[] = [];
  const opened: Promise<unknown>[] = [];
  for (let a = 1; a <= 20; a++)
    for (let i = 0; i < 64; i++) {
      const s = tcpConnect({ host: "::1", port: node.port, localAddress: `2001:db8:1::${a.toString(16)}` });
      s.on("error", () => {});
      silent.push(s);
      opened.push(Promise.race([once(s, "connect"), once(s, "close")]));
    }
  await Promise.all(opened);
  const beta = fleet.identity("beta");
  const answers: (number | string)[] = [];
  for (let i = 0; i < 5; i++)
    answers.push(
      await new Promise<number | string>((resolve) => {
        // localAddress is honoured by tls.connect (it passes it to the socket) but missing from its type.
        const options = {
          host: "::1",
          port: node.port,
          localAddress: "2001:db8:2::1",
          cert: beta.cert,
          key: beta.key,
          ca: beta.ca,
          checkServerIdentity: () => undefined,
        } as ConnectionOptions;
        const s = tlsConnect(options);
        let got = "";
        s.on("secureConnect", () => s.write("GET /health HTTP/1.1\r\nhost: alpha\r\nconnection: close\r\n\r\n"));
        s.on("data", (d) => {
          got += d.toString("latin1");
          const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
          if (m) {
            s.destroy();
            resolve(Number(m[1]));
          }
        });
        s.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
        s.on("close", () => resolve("closed"));
      }),
    );
  const metrics = await (await fetch(`${admin}/metrics`)).text();
  const refused = Object.fromEntries(
    metrics
      .split("\n")
      .filter((l) => l.startsWith("a2a_node_connections_refused_total{"))
      .map((l) => [/reason="([^"]+)"/.exec(l)?.[1], Number(l.split(" ").at(-1))]),
  );
  const open = Number(/^a2a_node_connections_open\{listener="mtls"\} (\d+)$/m.exec(metrics)?.[1]);
  console.log(JSON.stringify({ answers, refused, open }));
  for (const s of silent) s.destroy();
} finally {
  await node.stop("SIGKILL");
  fleet.cleanup();
}
process.exit(0);
