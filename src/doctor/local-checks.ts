/**
 * What doctor can check without the network: the home's permissions, the certificate (validity, expiry,
 * issued by the fleet CA in this home, key belongs to it, not revoked by the list this home holds), the
 * revocation list's age, and the database.
 */
import { Database } from "bun:sqlite";
import { X509Certificate, createPrivateKey } from "node:crypto";
import { accessSync, constants, existsSync, readFileSync, statSync } from "node:fs";
import type { HomePaths } from "../home";
import { type Finding, fail, octal, ok, skip, warn } from "./check";
import { readRevocationList } from "../../pki/crl-reader";
import { serialOf } from "../../pki/fleet-member";
import { newIdentityHint } from "../fleet/revocation-state";

/** Days before expiry from which doctor warns. */
export const EXPIRY_WARNING_DAYS = 30;

export function checkHome(paths: HomePaths): Finding[] {
  const out: Finding[] = [];
  const owner = statSync(paths.root).uid;
  for (const dir of [paths.root, paths.secretsDir]) {
    if (!existsSync(dir)) continue;
    const mode = statSync(dir).mode;
    out.push(
      (mode & 0o077) === 0
        ? ok("permissions", `${dir} is ${octal(mode)}`)
        : fail(
            "permissions",
            `${dir} is ${octal(mode)}: others can look inside, and it holds keys`,
            `chmod 700 ${dir}`,
          ),
    );
  }
  for (const key of [paths.nodeKey, paths.caKey, paths.database]) {
    if (!existsSync(key)) continue;
    const st = statSync(key);
    const what = "permissions";
    if ((st.mode & 0o077) !== 0)
      out.push(fail(what, `${key} is ${octal(st.mode)}: readable by others`, `chmod 600 ${key}`));
    else if (st.uid !== owner)
      out.push(
        fail(
          what,
          `${key} belongs to uid ${st.uid}, the home to uid ${owner}: the node, running as the home's owner, cannot read it`,
          `chown ${owner}:${statSync(paths.root).gid} ${key}`,
        ),
      );
    else out.push(ok(what, `${key} is ${octal(st.mode)}`));
  }
  return out;
}

/** The node certificate: present, valid now and for how long, issued by this home's fleet CA, with its key. */
export function checkCertificate(paths: HomePaths, now = new Date()): Finding[] {
  if (!existsSync(paths.nodeCert))
    return [
      fail(
        "certificate",
        `no node certificate at ${paths.nodeCert}`,
        "a2a-node init-pki --name NAME (a new fleet) or --bundle FILE (joining one)",
      ),
    ];
  const out: Finding[] = [];
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(readFileSync(paths.nodeCert));
  } catch (err) {
    return [
      fail(
        "certificate",
        `${paths.nodeCert} cannot be read as a certificate: ${(err as Error).message}`,
        "restore it from a backup, or set up this node in a fresh home",
      ),
    ];
  }
  const name = /(?:^|\n)CN=([^\n]*)/.exec(cert.subject)?.[1] ?? "?";
  // The CA's own home renews itself and keeps the key; another machine needs the CA machine's help.
  const renew = existsSync(paths.caKey)
    ? "renew it here with this home's fleet CA, keeping its key (so pins of it hold): a2a-node pki renew"
    : `get a new one: on the CA machine 'a2a-node pki issue ${name} --out ${name}.bundle'; here, move ${paths.nodeKey} and ${paths.nodeCert} aside, then 'a2a-node init-pki --bundle ${name}.bundle'`;
  const days = Math.floor((cert.validToDate.getTime() - now.getTime()) / 86_400_000);
  if (now < cert.validFromDate)
    out.push(
      fail(
        "certificate",
        `node "${name}": not valid before ${cert.validFromDate.toISOString()}`,
        "check this machine's clock (timedatectl)",
      ),
    );
  else if (now > cert.validToDate)
    out.push(
      fail("certificate", `node "${name}": expired on ${cert.validToDate.toISOString()}; peers refuse it`, renew),
    );
  else if (days < EXPIRY_WARNING_DAYS)
    out.push(
      warn(
        "certificate",
        `node "${name}": expires in ${days} days (${cert.validToDate.toISOString().slice(0, 10)})`,
        renew,
      ),
    );
  else
    out.push(
      ok(
        "certificate",
        `node "${name}": valid, expires in ${days} days (${cert.validToDate.toISOString().slice(0, 10)})`,
      ),
    );
  out.push(checkChain(paths, cert, now));
  out.push(checkKeyPair(paths, cert));
  return out;
}

function checkChain(paths: HomePaths, cert: X509Certificate, now: Date): Finding {
  if (!existsSync(paths.caCert))
    return fail(
      "fleet CA",
      `no fleet CA certificate at ${paths.caCert}`,
      "copy the fleet's certs/ca.crt here, or reinstall the identity from its bundle",
    );
  let ca: X509Certificate;
  try {
    ca = new X509Certificate(readFileSync(paths.caCert));
  } catch (err) {
    return fail(
      "fleet CA",
      `${paths.caCert} cannot be read as a certificate: ${(err as Error).message}`,
      "restore it from the CA machine's certs/ca.crt",
    );
  }
  const caName = /(?:^|\n)CN=([^\n]*)/.exec(ca.subject)?.[1] ?? "?";
  if (!ca.ca)
    return fail(
      "fleet CA",
      `${paths.caCert} is not a CA certificate`,
      "restore the fleet CA certificate (certs/ca.crt on the CA machine)",
    );
  if (!cert.checkIssued(ca) || !cert.verify(ca.publicKey))
    return fail(
      "fleet CA",
      `the node certificate was not issued by this home's fleet CA "${caName}"`,
      "the certificate and the CA come from different fleets: reinstall this node's bundle, which carries both",
    );
  if (now > ca.validToDate)
    return fail(
      "fleet CA",
      `the fleet CA "${caName}" expired on ${ca.validToDate.toISOString()}`,
      "every certificate of the fleet is refused: create a new fleet (init-pki --name) and issue new bundles",
    );
  return ok("fleet CA", `the certificate chains to the fleet CA "${caName}" (${ca.fingerprint256.slice(0, 23)}...)`);
}

function checkKeyPair(paths: HomePaths, cert: X509Certificate): Finding {
  if (!existsSync(paths.nodeKey))
    return fail(
      "key",
      `no node key at ${paths.nodeKey}`,
      "restore it from a backup, or set up this node in a fresh home",
    );
  let pem: string;
  try {
    pem = readFileSync(paths.nodeKey, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return fail(
      "key",
      `cannot read ${paths.nodeKey} (${code})`,
      code === "EACCES"
        ? "run doctor as the node's user (sudo -u a2a-node, or sudo for the system service)"
        : "check the file",
    );
  }
  try {
    if (!cert.checkPrivateKey(createPrivateKey(pem)))
      return fail(
        "key",
        `${paths.nodeKey} does not belong to the node certificate`,
        "restore the matching key and certificate pair",
      );
  } catch {
    return fail("key", `${paths.nodeKey} is not a valid private key`, "restore it from a backup");
  }
  return ok("key", `${paths.nodeKey} belongs to the certificate`);
}

/** The database opens, and a write transaction can start (taken and given back: nothing changes). */
export function checkDatabase(paths: HomePaths): Finding {
  if (!existsSync(paths.database)) {
    try {
      accessSync(paths.root, constants.W_OK);
    } catch {
      return fail(
        "database",
        `no database yet, and ${paths.root} is not writable to create it`,
        `give the node's user write access to ${paths.root}`,
      );
    }
    return skip("database", `no database yet at ${paths.database}; the first 'a2a-node serve' creates it`);
  }
  let db: Database | undefined;
  try {
    db = new Database(paths.database, { readwrite: true, create: false });
    db.exec("PRAGMA busy_timeout = 5000");
    const tables = db.query("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number };
    db.exec("BEGIN IMMEDIATE");
    db.exec("ROLLBACK");
    const size = statSync(paths.database).size;
    return ok(
      "database",
      `${paths.database} opens and is writable (${tables.n} tables, ${(size / 1048576).toFixed(1)} MiB)`,
    );
  } catch (err) {
    const msg = (err as Error).message;
    const fix = /readonly|read-only|permission|unable to open/i.test(msg)
      ? `the node's user must own ${paths.database} and its folder: chown it, or run doctor as that user`
      : /locked|busy/i.test(msg)
        ? "another process holds a long write: see which with 'fuser', and stop it"
        : "restore the database from a backup; 'sqlite3 FILE \"PRAGMA integrity_check\"' says what is wrong";
    return fail("database", `${paths.database}: ${msg}`, fix);
  } finally {
    db?.close();
  }
}

/**
 * The revocation list this home holds (certs/crl.pem): whether it revokes this node's own certificate (peers
 * then refuse it), and whether it is past its next update (nothing newer came from the CA since: revocations
 * made meanwhile are not known here). `fetches`: the node gets its list by itself (ca_peer, or it is the CA).
 */
export function checkRevocation(paths: HomePaths, fetches: boolean, now = new Date()): Finding {
  if (!existsSync(paths.crl))
    return ok("revocation", "no revocation list here: nothing revoked yet (or none fetched yet)");
  let list;
  let cert: X509Certificate;
  try {
    list = readRevocationList(readFileSync(paths.crl, "utf8"), readFileSync(paths.caCert, "utf8"), paths.crl);
    cert = new X509Certificate(readFileSync(paths.nodeCert));
  } catch (err) {
    return fail(
      "revocation",
      (err as Error).message,
      `remove ${paths.crl}; serve fetches the list again from ca_peer (or import it: a2a-node pki import-crl FILE)`,
    );
  }
  const name = /(?:^|\n)CN=([^\n]*)/.exec(cert.subject)?.[1] ?? "?";
  const revokedAt = list.revoked.get(serialOf(cert));
  if (revokedAt)
    return fail(
      "revocation",
      `node "${name}": its certificate (serial ${serialOf(cert)}) was revoked by the fleet CA on ${revokedAt.toISOString()}; peers refuse it`,
      newIdentityHint(name),
    );
  const age = Math.round((now.getTime() - list.thisUpdate.getTime()) / 1000);
  const about = `list number ${list.number} (${list.revoked.size} revoked), signed ${age} s ago`;
  if (list.nextUpdate && now > list.nextUpdate)
    return warn(
      "revocation",
      `${about}: past its next update (${list.nextUpdate.toISOString()}), so revocations made since are not known here`,
      fetches
        ? "check that the CA node runs and answers (a2a-node ping CA_NODE); the node's log says why each fetch failed"
        : "bring a newer list from the CA machine (pki export-crl there, pki import-crl here)",
    );
  return ok(
    "revocation",
    `${about}, next update ${list.nextUpdate?.toISOString() ?? "not set"}; this node's certificate is not on it`,
  );
}
