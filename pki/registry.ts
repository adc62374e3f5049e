import { Database } from "bun:sqlite";
import { closeSync, constants, fchmodSync, fstatSync, openSync } from "node:fs";
import { pkiErrors } from "./errors";
import { SECRET_MODE } from "./secure-file";

/** How a certificate came to be issued; shown by `pki list`. */
export type IssueKind = "init" | "bundle" | "csr" | "renew" | "join";

/** One certificate the fleet CA issued, as the CA remembers it. */
export interface IssuedCert {
  name: string;
  /** Uppercase hex, as node:tls reports it. */
  serial: string;
  /** "AB:CD:...", as node:tls reports fingerprint256. */
  fingerprint256: string;
  sans: string[];
  notBefore: Date;
  notAfter: Date;
  issuedAt: Date;
  how: IssueKind;
  revokedAt?: Date;
  revokeReason?: string;
  /** For a renewal: the serial of the certificate it renewed (the one its holder presented). */
  renewedFrom?: string;
}

/** A one-time enrollment token as the CA keeps it: only the SHA-256 of its secret, never the secret. */
export interface StoredToken {
  hash: string;
  name: string;
  sans: string[];
  days: number;
  replace: boolean;
  createdAt: Date;
  expiresAt: Date;
  usedAt?: Date;
}

const SCHEMA_VERSION = 3;

// Version 1. Dates are milliseconds since the epoch; SANs are JSON arrays.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS certificates (
  serial TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  fingerprint256 TEXT NOT NULL UNIQUE,
  sans TEXT NOT NULL,
  not_before INTEGER NOT NULL,
  not_after INTEGER NOT NULL,
  issued_at INTEGER NOT NULL,
  how TEXT NOT NULL,
  revoked_at INTEGER,
  revoke_reason TEXT
);
CREATE INDEX IF NOT EXISTS certificates_by_name ON certificates (name);
CREATE TABLE IF NOT EXISTS tokens (
  hash TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  sans TEXT NOT NULL,
  days INTEGER NOT NULL,
  replace INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at INTEGER
);
CREATE TABLE IF NOT EXISTS counters (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
`;

// Version 2: fleet-wide choices of the CA (the SPIFFE trust domain).
const SCHEMA_2 = `
CREATE TABLE IF NOT EXISTS ca_settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
`;

// Version 3: which certificate a renewal renewed, so revoking one revokes what was renewed from it.
const SCHEMA_3 = `ALTER TABLE certificates ADD COLUMN renewed_from TEXT;`;

interface CertRow {
  serial: string;
  name: string;
  fingerprint256: string;
  sans: string;
  not_before: number;
  not_after: number;
  issued_at: number;
  how: string;
  revoked_at: number | null;
  revoke_reason: string | null;
  renewed_from: string | null;
}

interface TokenRow {
  hash: string;
  name: string;
  sans: string;
  days: number;
  replace: number;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

/**
 * What the fleet CA issued, revoked and promised (enrollment tokens): a small SQLite file next to the CA key
 * (secrets/ca-registry.db, 0600). SQLite rather than a JSON file because two processes write it (the CLI on
 * the CA machine and the CA node's daemon, which renews and enrolls): each change is one transaction, and
 * busy_timeout makes a second writer wait instead of losing the first one's change.
 *
 * @example const reg = CaRegistry.open(paths.caRegistry); reg.validFor("beta", new Date()); reg.close();
 */
export class CaRegistry {
  private constructor(private readonly db: Database) {}

  static open(path: string): CaRegistry {
    createPrivate(path);
    let db: Database;
    try {
      db = new Database(path, { create: false, strict: true });
      // DELETE journal (the default): a rollback journal exists only during a write, and SQLite gives it the
      // database file's mode, so no readable side file is left next to the key.
      db.exec("PRAGMA busy_timeout = 5000");
      const version = (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
      if (version > SCHEMA_VERSION)
        throw pkiErrors.readFailed(path, `made by a newer a2a-node (registry version ${version})`);
      if (version < SCHEMA_VERSION) {
        db.transaction(() => {
          if (version < 1) db.exec(SCHEMA);
          if (version < 2) db.exec(SCHEMA_2);
          db.exec(SCHEMA_3);
          db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
        }).immediate();
      }
    } catch (err) {
      if ((err as { name?: string }).name === "PkiError") throw err;
      throw pkiErrors.readFailed(path, `not a CA registry (${(err as Error).message})`);
    }
    return new CaRegistry(db);
  }

  /** Runs `body` as one write transaction (BEGIN IMMEDIATE: a concurrent writer waits for it). */
  transaction<T>(body: () => T): T {
    return this.db.transaction(body).immediate();
  }

  record(cert: Omit<IssuedCert, "revokedAt" | "revokeReason">): void {
    this.db
      .query(
        `INSERT INTO certificates (serial, name, fingerprint256, sans, not_before, not_after, issued_at, how, renewed_from)
         VALUES ($serial, $name, $fp, $sans, $nb, $na, $at, $how, $from)`,
      )
      .run({
        serial: normalizeSerial(cert.serial),
        name: cert.name,
        fp: cert.fingerprint256,
        sans: JSON.stringify(cert.sans),
        nb: cert.notBefore.getTime(),
        na: cert.notAfter.getTime(),
        at: cert.issuedAt.getTime(),
        how: cert.how,
        from: cert.renewedFrom ? normalizeSerial(cert.renewedFrom) : null,
      });
  }

  /**
   * The certificates renewed from this one, and from those, and so on (they carry its key, or were asked for with it).
   */
  renewedFrom(serial: string): IssuedCert[] {
    return (
      this.db
        .query(
          `WITH RECURSIVE later(serial) AS (SELECT serial FROM certificates WHERE renewed_from = $serial
             UNION SELECT c.serial FROM certificates c JOIN later l ON c.renewed_from = l.serial)
           SELECT * FROM certificates WHERE serial IN (SELECT serial FROM later) ORDER BY issued_at, rowid`,
        )
        .all({ serial: normalizeSerial(serial) }) as CertRow[]
    ).map(toCert);
  }

  /** Every certificate, oldest first. */
  list(): IssuedCert[] {
    return (this.db.query("SELECT * FROM certificates ORDER BY issued_at, rowid").all() as CertRow[]).map(toCert);
  }

  /** NAME's certificates that are neither revoked nor expired at `now`. */
  validFor(name: string, now: Date): IssuedCert[] {
    return (
      this.db
        .query(
          "SELECT * FROM certificates WHERE name = $name AND revoked_at IS NULL AND not_after > $now ORDER BY issued_at, rowid",
        )
        .all({ name, now: now.getTime() }) as CertRow[]
    ).map(toCert);
  }

  bySerial(serial: string): IssuedCert | undefined {
    const row = this.db
      .query("SELECT * FROM certificates WHERE serial = $serial")
      .get({ serial: normalizeSerial(serial) }) as CertRow | null;
    return row ? toCert(row) : undefined;
  }

  byFingerprint(fingerprint256: string): IssuedCert | undefined {
    const row = this.db
      .query("SELECT * FROM certificates WHERE fingerprint256 = $fp")
      .get({ fp: fingerprint256.toUpperCase() }) as CertRow | null;
    return row ? toCert(row) : undefined;
  }

  /** Marks certificates revoked (those already revoked keep their first date); returns the ones it changed. */
  revoke(serials: string[], at: Date, reason: string | undefined): IssuedCert[] {
    const changed: IssuedCert[] = [];
    for (const serial of serials) {
      const row = this.db
        .query(
          "UPDATE certificates SET revoked_at = $at, revoke_reason = $reason WHERE serial = $serial AND revoked_at IS NULL RETURNING *",
        )
        .get({ serial: normalizeSerial(serial), at: at.getTime(), reason: reason ?? null }) as CertRow | null;
      if (row) changed.push(toCert(row));
    }
    return changed;
  }

  /** Revoked certificates that have not yet expired: what a revocation list must carry. */
  revokedUnexpired(now: Date): IssuedCert[] {
    return (
      this.db
        .query(
          "SELECT * FROM certificates WHERE revoked_at IS NOT NULL AND not_after > $now ORDER BY revoked_at, rowid",
        )
        .all({ now: now.getTime() }) as CertRow[]
    ).map(toCert);
  }

  /** The next value of a counter that only grows (the revocation list's number). */
  next(counter: string): number {
    const row = this.db
      .query(
        "INSERT INTO counters (name, value) VALUES ($name, 1) ON CONFLICT (name) DO UPDATE SET value = value + 1 RETURNING value",
      )
      .get({ name: counter }) as { value: number };
    return row.value;
  }

  addToken(token: StoredToken): void {
    this.db
      .query(
        `INSERT INTO tokens (hash, name, sans, days, replace, created_at, expires_at)
         VALUES ($hash, $name, $sans, $days, $replace, $created, $expires)`,
      )
      .run({
        hash: token.hash,
        name: token.name,
        sans: JSON.stringify(token.sans),
        days: token.days,
        replace: token.replace ? 1 : 0,
        created: token.createdAt.getTime(),
        expires: token.expiresAt.getTime(),
      });
  }

  token(hash: string): StoredToken | undefined {
    const row = this.db.query("SELECT * FROM tokens WHERE hash = $hash").get({ hash }) as TokenRow | null;
    return row ? toToken(row) : undefined;
  }

  /**
   * Marks a token used, if it is still unused and unexpired at `now`; false otherwise. One UPDATE, so two
   * enrollments racing with the same token cannot both win.
   */
  useToken(hash: string, now: Date): boolean {
    const r = this.db
      .query("UPDATE tokens SET used_at = $now WHERE hash = $hash AND used_at IS NULL AND expires_at > $now")
      .run({ hash, now: now.getTime() });
    return r.changes === 1;
  }

  /** A fleet-wide choice of the CA, such as "spiffe_domain"; undefined when unset. */
  setting(key: string): string | undefined {
    const row = this.db.query("SELECT value FROM ca_settings WHERE key = $key").get({ key }) as {
      value: string;
    } | null;
    return row?.value;
  }

  setSetting(key: string, value: string | undefined): void {
    if (value === undefined) this.db.query("DELETE FROM ca_settings WHERE key = $key").run({ key });
    else
      this.db
        .query(
          "INSERT INTO ca_settings (key, value) VALUES ($key, $value) ON CONFLICT (key) DO UPDATE SET value = $value",
        )
        .run({ key, value });
  }

  close(): void {
    this.db.close();
  }
}

/** Uppercase hex without leading zeros: the one spelling a serial is stored and compared in. */
export function normalizeSerial(serial: string): string {
  const hex = serial
    .replace(/[:\s]/g, "")
    .toUpperCase()
    .replace(/^0+(?=.)/, "");
  return hex;
}

function toCert(r: CertRow): IssuedCert {
  return {
    name: r.name,
    serial: r.serial,
    fingerprint256: r.fingerprint256,
    sans: JSON.parse(r.sans) as string[],
    notBefore: new Date(r.not_before),
    notAfter: new Date(r.not_after),
    issuedAt: new Date(r.issued_at),
    how: r.how as IssueKind,
    ...(r.revoked_at !== null ? { revokedAt: new Date(r.revoked_at) } : {}),
    ...(r.revoke_reason !== null ? { revokeReason: r.revoke_reason } : {}),
    ...(r.renewed_from ? { renewedFrom: r.renewed_from } : {}),
  };
}

function toToken(r: TokenRow): StoredToken {
  return {
    hash: r.hash,
    name: r.name,
    sans: JSON.parse(r.sans) as string[],
    days: r.days,
    replace: r.replace === 1,
    createdAt: new Date(r.created_at),
    expiresAt: new Date(r.expires_at),
    ...(r.used_at !== null ? { usedAt: new Date(r.used_at) } : {}),
  };
}

/** Creates the file 0600 if absent; an existing one that others could read is tightened. */
function createPrivate(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, constants.O_CREAT | constants.O_RDWR, SECRET_MODE);
  } catch (err) {
    throw pkiErrors.readFailed(path, (err as NodeJS.ErrnoException).code ?? "unknown error");
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw pkiErrors.readFailed(path, "not a regular file");
    if ((st.mode & 0o777) !== SECRET_MODE) fchmodSync(fd, SECRET_MODE);
  } finally {
    closeSync(fd);
  }
}
