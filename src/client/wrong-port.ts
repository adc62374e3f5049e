/**
 * A node's other ports answer a fleet client too: the enrollment port presents the node's own fleet
 * certificate (a joining machine checks it against the CA fingerprint) and asks for none, so a client that
 * dials it by mistake gets through TLS, proves the node's name, and then only 404s. The port says what it is
 * in a header on every answer, and the client says so instead of "not an A2A agent" (or advice to pin it).
 */

/** The response header naming what a port of a2a-node serves, where that is not A2A. */
export const PORT_ROLE_HEADER = "a2a-node-port";

/** The enrollment port's role, as PORT_ROLE_HEADER names it. */
export const ENROLLMENT_ROLE = "enrollment";

/** The server at that URL is a node's port for something other than A2A. */
export class WrongPortError extends Error {
  constructor(
    readonly url: string,
    readonly role: string,
    /** The node's fleet name, if the connection proved it. */
    readonly node?: string,
    /** The port the node serves A2A on, if it said. */
    readonly a2aPort?: number,
  ) {
    super(
      `${url} is the ${role} port of ${node ? `fleet node '${node}'` : "an a2a-node"}${role === ENROLLMENT_ROLE ? " (it serves only 'a2a-node join')" : ""}, not its A2A port${a2aPort ? `; it serves A2A on port ${a2aPort}` : ""}`,
    );
    this.name = "WrongPortError";
  }

  /** The next step: the same host at the A2A port, when the node named it. */
  hint(peerName?: string): string {
    const u = new URL(this.url);
    const name = peerName ?? this.node ?? "NAME";
    if (this.a2aPort) {
      u.port = String(this.a2aPort);
      return `use ${u.origin} instead (the port its log names as listen=https://…): 'a2a-node peers add ${name} ${u.origin} --pin${peerName ? " --replace" : ""}'`;
    }
    return "use the port 'a2a-node serve' logs as listen=https://… (9443 by default)";
  }
}

/**
 * Throws WrongPortError if `res` comes from a port that says it is not an A2A port (its body, a small JSON
 * error, names the A2A port); returns `res` untouched otherwise.
 */
export async function refuseWrongPort(url: string, res: Response, node?: string): Promise<Response> {
  const role = res.headers.get(PORT_ROLE_HEADER);
  if (!role) return res;
  const body = (await res.json().catch(() => ({}))) as { a2aPort?: unknown };
  const port = typeof body.a2aPort === "number" && Number.isInteger(body.a2aPort) ? body.a2aPort : undefined;
  throw new WrongPortError(new URL(url).origin, role, node, port);
}
