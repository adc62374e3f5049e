import type { AddressInfo, Server } from "node:net";

/** A bound listener's address and its two ways of stopping. */
export interface Bound {
  port: number;
  url: string;
  /** Takes no new connections; open ones go on. */
  stopAccepting(): void;
  /** Takes no new connections and closes the open ones (after their requests, up to the connections' grace). */
  close(): Promise<void>;
}

/**
 * Binds `server` (net or tls) to host:port (port 0: any free one). Resolves once it listens, with the port it
 * got, the URL it is reached at (an IPv6 host in brackets) and the means to stop it; rejects if it cannot bind
 * (EADDRINUSE, ...). Every listener of the node binds through here.
 */
export function bindServer(
  server: Server,
  port: number,
  host: string,
  scheme: "http" | "https",
  connections: { close(): Promise<void> },
): Promise<Bound> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const bound = (server.address() as AddressInfo).port;
      resolve({
        port: bound,
        url: `${scheme}://${host.includes(":") ? `[${host}]` : host}:${bound}`,
        stopAccepting: () => void server.close(),
        close: async () => {
          if (server.listening) server.close();
          await connections.close();
        },
      });
    });
  });
}
