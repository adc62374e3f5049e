import { ADMIN_MAX_CONNECTIONS } from "./admin-listener";
import type { ConnectionLimits } from "./connection-limits";

/** The settings a listener's caps come from. */
export interface CapSettings {
  maxConnections: number;
  maxConnectionsPerAddress: number;
  /** Unset: as many as max_connections (unauthenticated connections are evicted first, not budgeted apart). */
  maxHandshakes?: number;
  tokenPort?: number;
  enrollPort?: number;
  plainHttpPort?: number;
  adminPort?: number;
}

/** The caps of each listener the settings open (mtls always). */
export type ListenerCaps = {
  mtls: ConnectionLimits;
  token?: ConnectionLimits;
  enroll?: ConnectionLimits;
  plain?: ConnectionLimits;
  admin?: ConnectionLimits;
};

/**
 * What each listener may hold, before fitting under the descriptor limit (descriptor-budget.ts): the
 * mutual-TLS and token listeners max_connections, of which max_handshakes (by default all) unauthenticated;
 * the enrollment port max_handshakes, every one of them unauthenticated; the plain loopback listener
 * max_connections; the admin port ADMIN_MAX_CONNECTIONS.
 */
export function listenerCaps(config: CapSettings): ListenerCaps {
  const perAddress = config.maxConnectionsPerAddress;
  const handshakes = Math.min(config.maxHandshakes ?? config.maxConnections, config.maxConnections);
  const remote: ConnectionLimits = {
    maxConnections: config.maxConnections,
    maxConnectionsPerAddress: perAddress,
    maxHandshakes: handshakes,
  };
  // Every caller of a loopback listener is this machine: one source, so only the total counts.
  const local = (n: number): ConnectionLimits => ({
    maxConnections: n,
    maxConnectionsPerAddress: Number.MAX_SAFE_INTEGER,
  });
  const caps: ListenerCaps = { mtls: remote };
  if (config.tokenPort !== undefined) caps.token = remote;
  if (config.enrollPort !== undefined)
    caps.enroll = {
      maxConnections: handshakes,
      maxConnectionsPerAddress: Math.min(perAddress, handshakes),
      maxHandshakes: handshakes,
    };
  if (config.plainHttpPort !== undefined) caps.plain = local(config.maxConnections);
  if (config.adminPort !== undefined) caps.admin = local(ADMIN_MAX_CONNECTIONS);
  return caps;
}
