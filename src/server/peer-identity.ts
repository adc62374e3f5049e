import type { TLSSocket } from "node:tls";
import { FleetMembership, type RevocationLookup } from "../../pki/fleet-member";
import type { CallerIdentity } from "../rpc/caller";

export type PeerIdentity = { caller: CallerIdentity; serial: string } | { refused: string; revoked?: true };

/**
 * Reads the caller a mutual-TLS connection proves, or why it proves none; once per connection, from the
 * socket only. The handshake must have verified the client's certificate against the fleet CA (`caPem`), and
 * the fleet must then accept it as a member's (pki/fleet-member.ts): the certificate's name becomes the
 * caller's name, which owns its tasks. A certificate on the fleet's revocation list (`revoked`) is refused.
 */
export function peerIdentifier(caPem: string, revoked?: RevocationLookup): (socket: TLSSocket) => PeerIdentity {
  const fleet = new FleetMembership(caPem, revoked);
  return (socket) => {
    if (!socket.authorized)
      return { refused: `its certificate did not verify: ${String(socket.authorizationError ?? "unknown reason")}` };
    const verdict = fleet.check(socket.getPeerCertificate());
    if ("refused" in verdict) return verdict;
    return {
      caller: { name: verdict.member.name, fingerprint: verdict.member.fingerprint256 },
      serial: verdict.member.serial,
    };
  };
}
