import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { PUBLIC_MODE, writeFileAtomic } from "./secure-file";

/**
 * Where the revocation list installed in a home came from, kept beside it (certs/crl.source.json) so
 * `pki show` can say it: signed by this home's CA, fetched from the CA node (ca_peer), or imported from a file.
 * The record names the list's number: a crl.pem replaced by other means (copied by hand) no longer matches it,
 * and its source is then unknown rather than wrongly told.
 */
export type CrlSource =
  | { kind: "local-ca"; at: string }
  | { kind: "ca-peer"; peer: string; at: string; checkedAt?: string }
  | { kind: "imported"; file: string; at: string };

type Record = CrlSource & { number: number };

export function crlSourcePath(crlPath: string): string {
  return join(dirname(crlPath), "crl.source.json");
}

/** Records where the list numbered `number`, just written to `crlPath`, came from. */
export function recordCrlSource(crlPath: string, number: number, source: CrlSource): void {
  writeFileAtomic(crlSourcePath(crlPath), `${JSON.stringify({ ...source, number })}\n`, {
    mode: PUBLIC_MODE,
    overwrite: true,
  });
}

/** Notes that the CA node was asked again and still serves the list numbered `number`. */
export function recordCrlChecked(crlPath: string, number: number, peer: string, at: Date): void {
  const record = readRecord(crlPath);
  if (record?.number !== number || record.kind !== "ca-peer" || record.peer !== peer) return;
  recordCrlSource(crlPath, number, { ...record, checkedAt: at.toISOString() });
}

/** The source of the list numbered `number` at `crlPath`; undefined when unrecorded or recorded for another list. */
export function readCrlSource(crlPath: string, number: number): CrlSource | undefined {
  const record = readRecord(crlPath);
  if (record?.number !== number) return undefined;
  const { number: _n, ...source } = record;
  return source as CrlSource;
}

function readRecord(crlPath: string): Record | undefined {
  const path = crlSourcePath(crlPath);
  if (!existsSync(path)) return undefined;
  try {
    const r = JSON.parse(readFileSync(path, "utf8")) as Record;
    return typeof r?.number === "number" && ["local-ca", "ca-peer", "imported"].includes(r.kind) ? r : undefined;
  } catch {
    return undefined;
  }
}
