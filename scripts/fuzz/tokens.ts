/**
 * Inputs are generated before the node exists, yet some must name things only the running node knows: a task
 * it made, its port (the Host header), the webhook sink's port. Inputs hold fixed-width tokens for those, as
 * wide as the values that replace them (task ids are 26-character ULIDs, loopback ports 5 digits), so every
 * length, Content-Length and chunk size computed at generation stays right once the bytes are rendered, and
 * the bytes generated (and hashed) are exactly what is sent, modulo these values.
 */

/** Task slots per listener, made during warm-up. */
export const POOL_SIZE = 8;
const ID_WIDTH = 26;
const PORT_WIDTH = 5;
const TILDE = 0x7e;

const slotToken = (letter: string, slot: number) => `~${letter}${slot}`.padEnd(ID_WIDTH, "~");

/** A task of the caller sending the request (made on the same listener). */
export const ownTask = (slot: number) => slotToken("T", slot);
/** A task of the other listener's caller: it must answer exactly like an unknown id. */
export const foreignTask = (slot: number) => slotToken("X", slot);
/** A conversation (contextId) of the calling caller. */
export const ownContext = (slot: number) => slotToken("C", slot);
/** The port of the listener the request goes to (for Host and Origin). */
export const LISTENER_PORT = "~PT~~";
/** The webhook sink's port (the only webhook target the node is allowed to reach). */
export const SINK_PORT = "~SK~~";

/** What the tokens stand for on the running node. */
export interface Runtime {
  ownTasks: string[];
  foreignTasks: string[];
  ownContexts: string[];
  listenerPort: number;
  sinkPort: number;
}

/** A runtime with made-up values, for checks that must see an input as the node will (see safe-urls.ts). */
export const SAMPLE_RUNTIME: Runtime = {
  ownTasks: Array.from({ length: POOL_SIZE }, (_, i) => `01JSAMPLET${i}`.padEnd(ID_WIDTH, "0")),
  foreignTasks: Array.from({ length: POOL_SIZE }, (_, i) => `01JSAMPLEX${i}`.padEnd(ID_WIDTH, "0")),
  ownContexts: Array.from({ length: POOL_SIZE }, (_, i) => `01JSAMPLEC${i}`.padEnd(ID_WIDTH, "0")),
  listenerPort: 45678,
  sinkPort: 45679,
};

export function checkRuntime(rt: Runtime): void {
  for (const id of [...rt.ownTasks, ...rt.foreignTasks, ...rt.ownContexts])
    if (id.length !== ID_WIDTH) throw new Error(`fuzz: expected ${ID_WIDTH}-character ids from the node, got '${id}'`);
  for (const port of [rt.listenerPort, rt.sinkPort])
    if (String(port).length !== PORT_WIDTH)
      throw new Error(`fuzz: port ${port} is not ${PORT_WIDTH} digits; tokens need loopback ports from 10000 up`);
}

/** Replaces every token in `bytes` (a copy; the input itself is left as generated). */
export function render(bytes: Uint8Array, rt: Runtime): Uint8Array {
  const out = Buffer.from(bytes);
  for (let i = out.indexOf(TILDE); i !== -1 && i < out.length - 1; i = out.indexOf(TILDE, i + 1)) {
    const value = valueAt(out, i, rt);
    if (value !== undefined) {
      out.write(value, i, "latin1");
      i += value.length - 1;
    }
  }
  return out;
}

function valueAt(buf: Buffer, i: number, rt: Runtime): string | undefined {
  const letter = String.fromCharCode(buf[i + 1]);
  if (letter === "P" || letter === "S") {
    const token = letter === "P" ? LISTENER_PORT : SINK_PORT;
    if (buf.toString("latin1", i, i + PORT_WIDTH) !== token) return undefined;
    return String(letter === "P" ? rt.listenerPort : rt.sinkPort);
  }
  const pool =
    letter === "T" ? rt.ownTasks : letter === "X" ? rt.foreignTasks : letter === "C" ? rt.ownContexts : undefined;
  if (!pool || i + ID_WIDTH > buf.length) return undefined;
  const slot = buf[i + 2] - 0x30;
  if (!(slot >= 0 && slot < POOL_SIZE) || buf.toString("latin1", i, i + ID_WIDTH) !== slotToken(letter, slot))
    return undefined;
  return pool[slot];
}
