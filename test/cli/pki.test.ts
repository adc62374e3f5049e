import { Database } from "bun:sqlite";
import { beforeAll, describe, expect, it } from "vitest";
import { chmodSync, copyFileSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { initPkiCommand } from "../../src/cli/commands/init-pki";
import { pkiCommand } from "../../src/cli/commands/pki";
import { CliError, ExitCode, UsageError } from "../../src/cli/errors";
import { bufferIo } from "../../src/cli/io";
import { homePaths } from "../../src/home";
import { RevocationState } from "../../src/fleet/revocation-state";
import { createLogger } from "../../src/log";
import { createCa, inspectCert, issueLeaf, keyPinOf, readBundle } from "../../pki";
import { tempDir } from "../helpers/temp-dir";

const tmp = () => tempDir("a2a-cli-pki-");

async function pki(argv: string[], home: string) {
  const io = bufferIo();
  const code = await pkiCommand.run(argv, { io, home });
  return { code, out: io.out(), err: io.err() };
}

async function failure(p: Promise<unknown>): Promise<CliError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(CliError);
  return err as CliError;
}

let caHome: string; // ran init-pki --name alice: holds the CA key
let bundleHome: string; // installed from a bundle: no CA key
beforeAll(async () => {
  caHome = join(tmp(), "alice");
  bundleHome = join(tmp(), "bob");
  await initPkiCommand.run(["--name", "alice"], { io: bufferIo(), home: caHome });
  const bundle = join(tmp(), "bob.bundle");
  await pki(["issue", "bob", "--out", bundle], caHome);
  await initPkiCommand.run(["--bundle", bundle], { io: bufferIo(), home: bundleHome });
});

describe("a2a-node pki", () => {
  it("has help listing the subcommands, with examples and exit codes", () => {
    expect(pkiCommand.name).toBe("pki");
    for (const section of ["USAGE", "SUBCOMMANDS", "EXAMPLES", "EXIT CODES"])
      expect(pkiCommand.help).toMatch(new RegExp(`^${section}$`, "m"));
    expect(pkiCommand.help).toMatch(/^ {2}issue {3}/m);
    expect(pkiCommand.help).toMatch(/^ {2}show {4}/m);
  });

  it.each([
    [
      [],
      /pki needs a subcommand: token, issue, sign, import, list, revoke, export-crl, import-crl, renew, needs-renewal, show, inspect/,
    ],
    [["token"], /pki token needs --name NAME/],
    [
      ["token", "--name", "x", "--ttl", "1 hour"],
      /--ttl must be a number and a unit, such as 15m, 1h or 2d \(got '1 hour'\)/,
    ],
    [["token", "--name", "x", "--ttl", "10"], /--ttl must be a number and a unit/],
    [["revoke"], /pki revoke needs a NAME or SERIAL/],
    [["export-crl"], /pki export-crl needs --out FILE/],
    [["import-crl"], /pki import-crl needs the FILE to install/],
    [["frobnicate"], /unknown pki subcommand 'frobnicate'/],
    [["issue", "--out", "x"], /needs the machine's NAME/],
    [["issue", "bob"], /needs --out FILE/],
    [["issue", "bob", "carol", "--out", "x"], /unexpected argument 'carol'/],
    [["issue", "bob", "--out", "x", "--days", "-1"], /--days must be a whole number/],
    [["show", "extra"], /unexpected argument 'extra'/],
    [["show", "--out", "x"], /unknown flag '--out'/],
  ])("rejects %j as a usage error (exit 2)", async (argv, message) => {
    const err = await failure(pki(argv as string[], caHome));
    expect(err).toBeInstanceOf(UsageError);
    expect(err.exitCode).toBe(2);
    expect(err.message).toMatch(message);
  });
});

describe("a2a-node pki issue", () => {
  it("writes a 0600 bundle and prints what to do with it", async () => {
    const out = join(tmp(), "carol.bundle");
    const r = await pki(["issue", "carol", "--san", "carol.lan", "--san", "10.0.0.7", "--out", out], caHome);
    expect(r.code).toBe(0);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const bundle = await readBundle(out);
    expect(inspectCert(bundle.cert).sans).toEqual(["carol", "localhost", "127.0.0.1", "carol.lan", "10.0.0.7"]);
    expect(r.out).toContain(`issued "carol" into ${out}`);
    expect(r.out).toContain(`fingerprint  ${inspectCert(bundle.cert).fingerprint256}`);
    expect(r.out).toContain(
      "next: copy it to carol over a private channel, run 'a2a-node init-pki --bundle FILE' there",
    );
    expect(r.out).not.toContain("PRIVATE KEY");
  });

  it("prints one line of JSON with --json", async () => {
    const out = join(tmp(), "dave.bundle");
    const r = await pki(["issue", "dave", "--out", out, "--days", "10", "--json"], caHome);
    expect(r.out.trim().split("\n")).toHaveLength(1);
    const j = JSON.parse(r.out);
    expect(j).toMatchObject({ name: "dave", out, sans: ["dave", "localhost", "127.0.0.1"] });
    expect(j.fingerprint256).toBe(inspectCert((await readBundle(out)).cert).fingerprint256);
    expect((Date.parse(j.notAfter) - Date.now()) / 86_400_000).toBeCloseTo(10, 1);
  });

  it("refuses an existing --out file unless --force", async () => {
    const out = join(tmp(), "erin.bundle");
    writeFileSync(out, "precious");
    const err = await failure(pki(["issue", "erin", "--out", out], caHome));
    expect(err.exitCode).toBe(1);
    expect(err.message).toBe(`refusing to overwrite ${out}: it already exists`);
    expect(err.hint).toContain("--force");
    expect(readFileSync(out, "utf8")).toBe("precious");
    expect((await pki(["issue", "erin", "--out", out, "--force"], caHome)).code).toBe(0);
    expect((await readBundle(out)).name).toBe("erin");
  });

  it("on a home without the CA key, says where to run it", async () => {
    const out = join(tmp(), "frank.bundle");
    const err = await failure(pki(["issue", "frank", "--out", out], bundleHome));
    expect(err.exitCode).toBe(1);
    expect(err.message).toBe(`no fleet CA key at ${homePaths(bundleHome).caKey}`);
    expect(err.hint).toBe("run this on the machine that ran 'a2a-node init-pki' first (it holds secrets/ca.key)");
    expect(existsSync(out)).toBe(false);
  });

  it.each(["local", "LOCAL", "localhost"])(
    "refuses the reserved name %j with exit 1, saying what it means, and writes nothing",
    async (name) => {
      const out = join(tmp(), "reserved.bundle");
      const err = await failure(pki(["issue", name, "--out", out], caHome));
      expect(err).not.toBeInstanceOf(UsageError);
      expect(err.exitCode).toBe(1);
      expect(err.message).toMatch(new RegExp(`^the name "${name.toLowerCase()}" is reserved: `));
      expect(err.hint).toBe("choose another name for this node, such as the machine's host name");
      expect(existsSync(out)).toBe(false);
    },
  );

  it("turns a bad SAN into exit 1 with a hint", async () => {
    const err = await failure(pki(["issue", "gina", "--san", "no spaces", "--out", join(tmp(), "g")], caHome));
    expect(err.exitCode).toBe(1);
    expect(err.message).toMatch(/^invalid --san "no spaces"/);
    expect(err.hint).toMatch(/DNS name/);
  });
});

describe("a2a-node pki show", () => {
  it("prints this node's identity, and that the CA home can issue", async () => {
    const { code, out } = await pki(["show"], caHome);
    const paths = homePaths(caHome);
    expect(code).toBe(0);
    expect(out).toMatch(/^node +alice$/m);
    expect(out).toContain(inspectCert(readFileSync(paths.nodeCert, "utf8")).fingerprint256);
    expect(out).toContain(inspectCert(readFileSync(paths.caCert, "utf8")).fingerprint256);
    expect(out).toMatch(/^CA key +.*ca\.key \(this home can issue/m);
  });

  it("--json gives the identity for scripts, with whether the home holds the CA key", async () => {
    const a = JSON.parse((await pki(["show", "--json"], caHome)).out);
    const b = JSON.parse((await pki(["show", "--json"], bundleHome)).out);
    expect(a).toMatchObject({ name: "alice", expired: false, ca: { hasKey: true } });
    expect(b).toMatchObject({
      name: "bob",
      expired: false,
      ca: { hasKey: false, fingerprint256: a.ca.fingerprint256 },
    });
    expect(b.fingerprint256).toBe(inspectCert(readFileSync(homePaths(bundleHome).nodeCert, "utf8")).fingerprint256);
    expect(b.sans).toEqual(["bob", "localhost", "127.0.0.1"]);
    expect(new Date(b.notAfter).getTime()).toBeGreaterThan(Date.now());
    expect(JSON.stringify(b)).not.toContain("PRIVATE KEY");
  });

  it("on an empty home, says how to get an identity", async () => {
    const err = await failure(pki(["show"], join(tmp(), "empty")));
    expect(err.exitCode).toBe(1);
    expect(err.hint).toBe("run 'a2a-node init-pki --name NAME' (or --bundle FILE)");
  });

  it("refuses to show a home whose key others can read, with the chmod fix", async () => {
    const home = join(tmp(), "loose");
    await initPkiCommand.run(["--name", "loose"], { io: bufferIo(), home });
    chmodSync(homePaths(home).nodeKey, 0o640);
    const err = await failure(pki(["show"], home));
    expect(err.hint).toBe(`chmod 600 ${homePaths(home).nodeKey}`);
  });
});

describe("a2a-node pki issue --replace and pki list", () => {
  it("refuses a name that holds a valid certificate, then --replace revokes it, and list shows both", async () => {
    const home = join(tmp(), "ca");
    await initPkiCommand.run(["--name", "ca"], { io: bufferIo(), home });
    const first = JSON.parse((await pki(["issue", "hank", "--out", join(tmp(), "h1"), "--json"], home)).out);

    const err = await failure(pki(["issue", "hank", "--out", join(tmp(), "h2")], home));
    expect(err.exitCode).toBe(1);
    expect(err.message).toBe(
      `"hank" already has a valid certificate (serial ${first.serial}, expires ${first.notAfter})`,
    );
    expect(err.hint).toContain("pass --replace to issue a new one and revoke the old one");

    const h3 = join(tmp(), "h3");
    const r = await pki(["issue", "hank", "--out", h3, "--replace"], home);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`revoked      serial ${first.serial} (hank, was valid until `);
    const second = inspectCert((await readBundle(h3)).cert);

    const text = (await pki(["list"], home)).out;
    const lines = text.trim().split("\n");
    expect(lines[0]).toMatch(/^NAME +STATUS +EXPIRES +SERIAL +FINGERPRINT \(SHA-256\)$/);
    expect(lines.slice(1).map((l) => l.split(/ +/).slice(0, 2))).toEqual([
      ["ca", "valid"],
      ["hank", "revoked"],
      ["hank", "valid"],
    ]);
    expect(lines[3]).toContain(second.serialNumber);
    expect(lines[3]).toContain(second.fingerprint256);

    const json = JSON.parse((await pki(["list", "--json"], home)).out);
    expect(json).toHaveLength(3);
    expect(json[1]).toMatchObject({
      name: "hank",
      serial: first.serial,
      status: "revoked",
      revokeReason: `replaced by ${second.serialNumber}`,
    });
    expect(json[2]).toMatchObject({
      name: "hank",
      serial: second.serialNumber,
      status: "valid",
      revokedAt: null,
      how: "bundle",
    });
  });

  it("list on a home without the CA key says where to run it", async () => {
    const err = await failure(pki(["list"], bundleHome));
    expect(err.message).toBe(`no fleet CA key at ${homePaths(bundleHome).caKey}`);
  });
});

describe("a2a-node pki inspect", () => {
  it("describes this node's certificate by default, and that the fleet CA issued it", async () => {
    const r = await pki(["inspect"], bundleHome);
    const cert = inspectCert(readFileSync(homePaths(bundleHome).nodeCert, "utf8"));
    expect(r.code).toBe(0);
    expect(r.out).toContain(`file          ${homePaths(bundleHome).nodeCert}\n`);
    expect(r.out).toContain("subject       CN=bob\n");
    expect(r.out).toContain("SANs          bob, localhost, 127.0.0.1\n");
    expect(r.out).toContain(`serial        ${cert.serialNumber}\n`);
    expect(r.out).toContain(`fingerprint   ${cert.fingerprint256}\n`);
    expect(r.out).toMatch(/^valid until +\d{4}-\d\d-\d\d \d\d:\d\d UTC \(in 365 days\)$/m);
    expect(r.out).toMatch(/^issuer +CN=a2a-node fleet CA [0-9a-f]{8} \(alice\)$/m);
    expect(r.out).toContain("kind          node certificate (serverAuth, clientAuth)\n");
    expect(r.out).toMatch(/^fleet CA +issued by this home's fleet CA \(/m);
  });

  it("says so when another CA issued the file, and describes a CA certificate", async () => {
    const other = join(tmp(), "other");
    await initPkiCommand.run(["--name", "zed"], { io: bufferIo(), home: other });
    const foreign = JSON.parse((await pki(["inspect", homePaths(other).nodeCert, "--json"], caHome)).out);
    expect(foreign).toMatchObject({ subjectCn: "zed", status: "valid", isCa: false, fleetCa: { chains: false } });
    expect(foreign.fleetCa.reason).toMatch(/^its issuer is "CN=a2a-node fleet CA/);
    const ca = JSON.parse((await pki(["inspect", homePaths(caHome).caCert, "--json"], caHome)).out);
    expect(ca).toMatchObject({
      isCa: true,
      fleetCa: { chains: true, reason: "it is the fleet CA certificate itself" },
    });
    expect((await pki(["inspect", homePaths(caHome).caCert], caHome)).out).toContain("kind          CA certificate\n");
  });

  it("exits 3 for a missing file and 1 for one that is not a certificate", async () => {
    const missing = await failure(pki(["inspect", join(tmp(), "nope.crt")], caHome));
    expect(missing.exitCode).toBe(3);
    expect(missing.message).toMatch(/^no certificate at .*nope\.crt$/);
    const junk = join(tmp(), "junk.crt");
    writeFileSync(junk, "not a certificate");
    const bad = await failure(pki(["inspect", junk], caHome));
    expect(bad.exitCode).toBe(1);
    expect(bad.message).toBe(`${junk} is not a valid PEM certificate`);
  });
});

describe("a2a-node pki needs-renewal", () => {
  it("exit 1 for a fresh certificate, 0 once within --within days of expiry", async () => {
    const fresh = await pki(["needs-renewal"], bundleHome);
    expect(fresh.code).toBe(1);
    expect(fresh.out).toMatch(/^no renewal needed: .*node\.crt expires .* \(in 365 days\); renewal is due \d{4}-/);
    expect((await pki(["needs-renewal", "--within", "364"], bundleHome)).code).toBe(1);
    const soon = await pki(["needs-renewal", "--within", "366", "--json"], bundleHome);
    expect(soon.code).toBe(0);
    expect(JSON.parse(soon.out)).toMatchObject({ needsRenewal: true, daysLeft: 365 });
  });

  it("exit 0 once two thirds of the lifetime have passed, and for an expired certificate", async () => {
    const past = new Date(Date.now() - 21 * 86_400_000);
    const ca = await createCa({ name: "old CA", now: past });
    const file = async (days: number) => {
      const path = join(tmp(), `${days}.crt`);
      writeFileSync(path, (await issueLeaf({ ca, name: "x", sans: [], days, now: past })).certPem);
      return path;
    };
    // 21 days into 30 (past 2/3), into 20 (expired), into 90 (not yet 2/3).
    const due = await pki(["needs-renewal", await file(30)], caHome);
    expect(due.code).toBe(0);
    expect(due.out).toMatch(/^renewal needed: .*30\.crt expires .* \(in 9 days\)\nnext: /);
    const gone = await pki(["needs-renewal", await file(20)], caHome);
    expect(gone.code).toBe(0);
    expect(gone.out).toMatch(/^renewal needed: .*20\.crt expired \d{4}-/);
    expect((await pki(["needs-renewal", await file(90)], caHome)).code).toBe(1);
  });

  it("exit 3 for a missing certificate, 255 for an unreadable one, 2 for a bad flag", async () => {
    expect((await failure(pki(["needs-renewal", join(tmp(), "none.crt")], caHome))).exitCode).toBe(3);
    const junk = join(tmp(), "junk.crt");
    writeFileSync(junk, "garbage");
    const bad = await failure(pki(["needs-renewal", junk], caHome));
    expect(bad.exitCode).toBe(255);
    expect(bad.message).toBe(`${junk} is not a valid PEM certificate`);
    expect((await failure(pki(["needs-renewal", "--within", "-3"], caHome))).exitCode).toBe(2);
  });
});

describe("a2a-node pki show: the revocation list in force", () => {
  it("none yet: says so and where one comes from; --json has crl null; the key pin is shown", async () => {
    const { out } = await pki(["show"], bundleHome);
    expect(out).toContain(
      "revocation list none here: nothing is refused as revoked (the CA home writes one at 'pki revoke';\n",
    );
    expect(out).toContain(
      `key pin         ${keyPinOf(readFileSync(homePaths(bundleHome).nodeCert, "utf8"))} (renewals keep it;`,
    );
    const json = JSON.parse((await pki(["show", "--json"], bundleHome)).out);
    expect(json.crl).toBeNull();
    expect(json.keyPin).toBe(keyPinOf(readFileSync(homePaths(bundleHome).nodeCert, "utf8")));
  });

  it("signed by this home's CA (pki revoke), imported elsewhere (pki import-crl), fetched from ca_peer, or unknown", async () => {
    const home = join(tmp(), "ca");
    await initPkiCommand.run(["--name", "ca"], { io: bufferIo(), home });
    await pki(["issue", "ivy", "--out", join(tmp(), "ivy")], home);
    await pki(["issue", "ida", "--out", join(tmp(), "ida")], home);
    const before = Date.now();
    await pki(["revoke", "ivy"], home);
    await pki(["revoke", "ida"], home);
    const local = await pki(["show"], home);
    expect(local.out).toMatch(
      /\nrevocation list number 2, 2 revoked certificates\n {16}issued \d{4}-\d\d-\d\d \d\d:\d\d UTC, next update (\d{4}-\d\d-\d\d \d\d:\d\d UTC|not set)\n {16}from: signed by this home's CA on \d{4}-/,
    );
    expect(local.out).toContain(`\n                ${homePaths(home).crl}\n`);
    const j = JSON.parse((await pki(["show", "--json"], home)).out).crl;
    expect(j).toMatchObject({ path: homePaths(home).crl, number: 2, revoked: 2, source: { kind: "local-ca" } });
    expect(new Date(j.thisUpdate).getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(new Date(j.source.at).getTime()).toBeGreaterThanOrEqual(before - 1000);

    const other = join(tmp(), "other");
    const b = join(tmp(), "o.bundle");
    await pki(["issue", "olive", "--out", b], home);
    await initPkiCommand.run(["--bundle", b], { io: bufferIo(), home: other });
    const file = join(tmp(), "fleet.crl");
    await pki(["export-crl", "--out", file], home);
    await pki(["import-crl", file], other);
    expect((await pki(["show"], other)).out).toMatch(
      new RegExp(
        `\nrevocation list number 3, 2 revoked certificates\n.*\n {16}from: imported from ${file.replace(/[.]/g, "\\.")} on \\d{4}-`,
      ),
    );
    expect(JSON.parse((await pki(["show", "--json"], other)).out).crl).toMatchObject({
      number: 3,
      revoked: 2,
      source: { kind: "imported", file },
    });

    // The daemon's fetch from ca_peer records itself; asked again, it notes that the list is still current.
    await pki(["export-crl", "--out", join(tmp(), "newer.crl")], home);
    const state = new RevocationState(
      homePaths(other).crl,
      () => ({ caPem: readFileSync(homePaths(other).caCert, "utf8"), name: "olive", serialNumber: "01" }),
      createLogger(() => {}, "error"),
    );
    state.loadFromDisk();
    expect(state.offer(readFileSync(homePaths(home).crl, "utf8"), "peer 'ca'", "ca")).toBe(true);
    const fetched = JSON.parse((await pki(["show", "--json"], other)).out).crl;
    expect(fetched).toMatchObject({ number: 4, source: { kind: "ca-peer", peer: "ca" } });
    expect(fetched.source.checkedAt).toBeUndefined();
    expect(state.offer(readFileSync(homePaths(home).crl, "utf8"), "peer 'ca'", "ca")).toBe(false);
    const checked = JSON.parse((await pki(["show", "--json"], other)).out).crl;
    expect(checked.source).toMatchObject({ kind: "ca-peer", peer: "ca", at: fetched.source.at });
    expect(typeof checked.source.checkedAt).toBe("string");
    expect((await pki(["show"], other)).out).toMatch(
      /\n {16}from: fetched from ca_peer 'ca' on \d{4}-\d\d-\d\d \d\d:\d\d UTC, still current there on \d{4}-/,
    );

    // A list copied in by hand: the record is of another list, so the source is not told.
    copyFileSync(file, homePaths(other).crl);
    expect(JSON.parse((await pki(["show", "--json"], other)).out).crl).toMatchObject({
      number: 3,
      source: { kind: "unknown" },
    });
    expect((await pki(["show"], other)).out).toContain(
      "from: not recorded (installed before this was kept, or copied in by hand)",
    );
  });

  it("a list that is not the fleet CA's is reported, not trusted", async () => {
    const home = join(tmp(), "x");
    await initPkiCommand.run(["--name", "x"], { io: bufferIo(), home });
    writeFileSync(homePaths(home).crl, "not a crl\n");
    const r = await pki(["show"], home);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`revocation list ${homePaths(home).crl} cannot be used: `);
    expect(JSON.parse((await pki(["show", "--json"], home)).out).crl).toMatchObject({
      path: homePaths(home).crl,
      error: expect.any(String),
    });
  });
});

describe("a2a-node pki revoke, export-crl, import-crl", () => {
  it("revokes by name, says what it signed and what next; again by serial says it already was", async () => {
    const home = join(tmp(), "ca");
    await initPkiCommand.run(["--name", "ca"], { io: bufferIo(), home });
    const issued = JSON.parse((await pki(["issue", "ivy", "--out", join(tmp(), "ivy"), "--json"], home)).out);
    const r = await pki(["revoke", "ivy", "--reason", "stolen"], home);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(new RegExp(`^revoked "ivy" serial ${issued.serial} \\(was valid until \\d{4}-`));
    expect(r.out).toMatch(/\nsigned revocation list number 1 \(1 revoked certificate\) into .*certs\/crl\.pem\n/);
    expect(r.out).toContain(
      "next: nodes with ca_peer set to this node fetch it within crl_refresh_seconds (SIGHUP: at once);",
    );
    const again = JSON.parse((await pki(["revoke", issued.serial, "--json"], home)).out);
    expect(again).toMatchObject({
      revoked: [],
      alreadyRevoked: [{ name: "ivy", serial: issued.serial, revokeReason: "stolen" }],
      crl: { number: 2, revoked: 1 },
    });
    const list = JSON.parse((await pki(["list", "--json"], home)).out);
    expect(list.find((c: { name: string }) => c.name === "ivy")).toMatchObject({
      status: "revoked",
      revokeReason: "stolen",
    });

    const unknown = await failure(pki(["revoke", "nobody"], home));
    expect(unknown.exitCode).toBe(ExitCode.NotFound);
    expect(unknown.hint).toBe("'a2a-node pki list' shows every certificate this CA issued");

    const crl = join(tmp(), "fleet.crl");
    const exported = await pki(["export-crl", "--out", crl], home);
    expect(exported.out).toMatch(
      new RegExp(
        `^wrote revocation list number 3 \\(1 revoked, signed .*\\) to ${crl.replace(/[.]/g, "\\.")}\nnext: on each machine, a2a-node pki import-crl `,
      ),
    );
    const shown = await pki(["inspect", crl], home);
    expect(shown.out).toContain("kind          revocation list number 3, signed by this home's fleet CA on ");
    expect(shown.out).toContain(`revoked       ${issued.serial} (on `);

    const other = join(tmp(), "other");
    const b = join(tmp(), "o.bundle");
    await pki(["issue", "olive", "--out", b], home);
    await initPkiCommand.run(["--bundle", b], { io: bufferIo(), home: other });
    expect((await pki(["import-crl", crl], other)).out).toMatch(
      /^installed revocation list number 3 \(1 revoked\) into .*crl\.pem\nno serve is running on this home\n$/,
    );
    expect((await pki(["import-crl", crl], other)).out).toBe(
      "revocation list number 3 is already installed; nothing changed\n",
    );
    const newer = join(tmp(), "newer.crl");
    await pki(["export-crl", "--out", newer], home);
    expect((await pki(["import-crl", newer], other)).code).toBe(0);
    const stale = await failure(pki(["import-crl", crl], other));
    expect(stale.exitCode).toBe(1);
    expect(stale.message).toBe(`${crl} is older than the revocation list installed here (number 3, installed 4)`);
    expect(stale.hint).toBe("ask the CA machine for its current list: a2a-node pki export-crl --out FILE");
  });
});

describe("a2a-node pki renew", () => {
  it("on the CA home, renews from its own CA: new certificate, same name, SANs and key (key pins stay valid)", async () => {
    const home = join(tmp(), "ca");
    await initPkiCommand.run(["--name", "ca", "--san", "ca.lan"], { io: bufferIo(), home });
    const before = inspectCert(readFileSync(homePaths(home).nodeCert, "utf8"));
    const pin = keyPinOf(readFileSync(homePaths(home).nodeCert, "utf8"));
    const key = readFileSync(homePaths(home).nodeKey, "utf8");
    const r = await pki(["renew"], home);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^renewed "ca" from this home's fleet CA\n/);
    expect(r.out).toContain(`previous     serial ${before.serialNumber}, valid until `);
    expect(r.out).toContain(`  key          kept ${pin} (key pins of this node stay valid)\n`);
    expect(r.out).toContain("no serve is running on this home; the next one uses it\n");
    expect(r.out).not.toContain("peers add");
    const after = inspectCert(readFileSync(homePaths(home).nodeCert, "utf8"));
    expect(after.sans).toEqual(before.sans);
    expect(after.serialNumber).not.toBe(before.serialNumber);
    expect(after.fingerprint256).not.toBe(before.fingerprint256);
    expect(keyPinOf(readFileSync(homePaths(home).nodeCert, "utf8"))).toBe(pin);
    expect(readFileSync(homePaths(home).nodeKey, "utf8")).toBe(key);
    expect(statSync(homePaths(home).nodeKey).mode & 0o777).toBe(0o600);
    const list = JSON.parse((await pki(["list", "--json"], home)).out);
    expect(list.map((c: { how: string }) => c.how)).toEqual(["init", "renew"]);
  });

  it("--rekey makes a new key and says how the pins of this node elsewhere are updated", async () => {
    const home = join(tmp(), "ca");
    await initPkiCommand.run(["--name", "ca"], { io: bufferIo(), home });
    writeFileSync(join(home, "config.toml"), 'advertise_url = "https://ca.lan:9443"\n');
    const pin = keyPinOf(readFileSync(homePaths(home).nodeCert, "utf8"));
    const key = readFileSync(homePaths(home).nodeKey, "utf8");
    const r = await pki(["renew", "--rekey"], home);
    expect(r.code).toBe(0);
    const fresh = keyPinOf(readFileSync(homePaths(home).nodeCert, "utf8"));
    expect(fresh).not.toBe(pin);
    expect(readFileSync(homePaths(home).nodeKey, "utf8")).not.toBe(key);
    expect(statSync(homePaths(home).nodeKey).mode & 0o777).toBe(0o600);
    expect(r.out).toContain(`  key          NEW ${fresh}\n`);
    expect(r.out).toContain(
      `the key changed: machines that pinned "ca" now refuse it until they pin it again. On each of them run\n  a2a-node peers add ca https://ca.lan:9443 --pin --replace\n`,
    );
    expect(r.out).toContain(`--key-pin ${fresh} --replace`);
    const json = JSON.parse((await pki(["renew", "--json"], home)).out);
    expect(json).toMatchObject({ name: "ca", keyPin: fresh, rekeyed: false, repin: null });
    const again = JSON.parse((await pki(["renew", "--rekey", "--json"], home)).out);
    expect(again).toMatchObject({ rekeyed: true, repin: "a2a-node peers add ca https://ca.lan:9443 --pin --replace" });
    expect(again.keyPin).not.toBe(fresh);
  });

  it("elsewhere, needs a CA peer: --ca-peer or ca_peer, registered", async () => {
    const none = await failure(pki(["renew"], bundleHome));
    expect(none).toBeInstanceOf(UsageError);
    expect(none.message).toBe(
      "this home does not hold the fleet CA: pass --ca-peer PEER (or set ca_peer in the config file)",
    );
    const unknown = await failure(pki(["renew", "--ca-peer", "alice"], bundleHome));
    expect(unknown.exitCode).toBe(3);
    expect(unknown.message).toBe("no peer named 'alice'");
    writeFileSync(join(bundleHome, "config.toml"), 'ca_peer = "alice-from-config"\n');
    expect((await failure(pki(["renew"], bundleHome))).message).toBe("no peer named 'alice-from-config'");
    const io = bufferIo({ A2A_NODE_CA_PEER: "alice-from-env" });
    const fromEnv = await pkiCommand.run(["renew"], { io, home: bundleHome }).catch((e) => e);
    expect(fromEnv.message).toBe("no peer named 'alice-from-env'");
    rmSync(join(bundleHome, "config.toml"));
  });
});

describe("a2a-node pki token", () => {
  it("prints the token, when it expires, and the join command with the CA fingerprint", async () => {
    const home = join(tmp(), "ca");
    await initPkiCommand.run(["--name", "ca"], { io: bufferIo(), home });
    writeFileSync(join(home, "config.toml"), "enroll_port = 9444\n");
    const r = await pki(["token", "--name", "kim", "--ttl", "90s"], home);
    expect(r.code).toBe(0);
    const fp = inspectCert(readFileSync(homePaths(home).caCert, "utf8"))
      .fingerprint256.replace(/:/g, "")
      .toLowerCase();
    expect(r.out).toMatch(
      /^join token for "kim", usable once until \d{4}-\d\d-\d\d \d\d:\d\d UTC:\n  kim\.[A-Za-z0-9_-]{43}\non kim, run:\n/,
    );
    expect(r.out).toMatch(
      new RegExp(`  a2a-node join https://\\S+:9444 --token kim\\.[A-Za-z0-9_-]{43} --ca-fingerprint sha256:${fp}\\n`),
    );
    expect(r.out).toContain("the token is a secret until used: pass it over a private channel");
    const err = await failure(pki(["token", "--name", "kim", "--ttl", "8d"], home));
    expect(err.exitCode).toBe(1);
    expect(err.message).toMatch(/a join token lives from 1 second to 7 days/);
    expect((await failure(pki(["token", "--name", "kim"], bundleHome))).message).toMatch(/^no fleet CA key at /);
  });

  it("the join command names the enrollment port's real host: a --san of the certificate, advertise_url's host, the address it is bound to; never a placeholder", async () => {
    const home = join(tmp(), "ca");
    await initPkiCommand.run(["--name", "ca", "--san", "ca.lan", "--san", "10.9.8.7"], { io: bufferIo(), home });
    writeFileSync(join(home, "config.toml"), "enroll_port = 9444\n");
    const url = async (env: Record<string, string> = {}) => {
      const io = bufferIo(env);
      expect(await pkiCommand.run(["token", "--name", "kim", "--replace", "--json"], { io, home })).toBe(0);
      const t = JSON.parse(io.out());
      expect(t.command.startsWith(`a2a-node join ${t.enrollUrl} --token kim.`)).toBe(true);
      return t.enrollUrl;
    };
    expect(await url()).toBe("https://ca.lan:9444");
    expect(await url({ A2A_NODE_ADVERTISE_URL: "https://alpha.example.net:9443" })).toBe(
      "https://alpha.example.net:9444",
    );
    expect(await url({ A2A_NODE_HOST: "10.9.8.7" })).toBe("https://10.9.8.7:9444");
    const text = await pki(["token", "--name", "kim"], home);
    expect(text.out).toContain(
      "(the host is this node's certificate (a --san it was issued for); if kim reaches this machine by another name or address",
    );
    // --url says it as the person knows it.
    const io = bufferIo();
    expect(
      await pkiCommand.run(["token", "--name", "kim", "--url", "https://198.51.100.4:19444", "--json"], { io, home }),
    ).toBe(0);
    expect(JSON.parse(io.out()).enrollUrl).toBe("https://198.51.100.4:19444");
    for (const bad of ["http://ca.lan:9444", "https://ca.lan", "https://ca.lan:9444/pki", "ca.lan:9444"])
      expect((await failure(pki(["token", "--name", "kim", "--url", bad], home))).message).toMatch(/^--url must be/);
  });

  it("without an enrollment port it makes no token and says how to open one", async () => {
    const home = join(tmp(), "ca");
    await initPkiCommand.run(["--name", "ca"], { io: bufferIo(), home });
    const err = await failure(pki(["token", "--name", "kim"], home));
    expect(err.exitCode).toBe(1);
    expect(err.message).toBe("this node serves no enrollment port, so a joining machine has nowhere to go");
    expect(err.hint).toMatch(
      /^serve with one \('a2a-node serve --enroll-port 9444', or enroll_port = 9444 in config\.toml\)/,
    );
    const db = new Database(homePaths(home).caRegistry, { readonly: true });
    expect(db.query("SELECT count(*) AS n FROM tokens").get()).toEqual({ n: 0 });
    db.close();
  });
});

describe("a passphrase on the CA key", () => {
  const PASS = "correct horse battery staple";

  it("init-pki --encrypt-ca-key takes it from the environment; commands that sign then need it, never as a flag", async () => {
    const home = join(tmp(), "ca");
    expect(
      await initPkiCommand.run(["--name", "ca", "--encrypt-ca-key"], {
        io: bufferIo({ A2A_NODE_CA_PASSPHRASE: PASS }),
        home,
      }),
    ).toBe(0);
    expect(readFileSync(homePaths(home).caKey, "utf8")).toMatch(/ENCRYPTED PRIVATE KEY/);

    const locked = await failure(pkiCommand.run(["issue", "lou", "--out", join(tmp(), "l")], { io: bufferIo(), home }));
    expect(locked.exitCode).toBe(1);
    expect(locked.message).toMatch(
      /^cannot use the fleet CA key .*ca\.key: it is encrypted and no passphrase was given$/,
    );
    expect(locked.hint).toBe(
      "set A2A_NODE_CA_PASSPHRASE, or ca_passphrase_file (a 0600 file), or run the command in a terminal to be asked",
    );

    expect(
      await pkiCommand.run(["issue", "lou", "--out", join(tmp(), "l2")], {
        io: bufferIo({ A2A_NODE_CA_PASSPHRASE: PASS }),
        home,
      }),
    ).toBe(0);

    // At a terminal it is asked for, once per command even when the command signs twice (issue --replace).
    const prompts: string[] = [];
    const io = { ...bufferIo(), askSecret: async (p: string) => (prompts.push(p), PASS) };
    expect(await pkiCommand.run(["issue", "lou", "--replace", "--out", join(tmp(), "l3")], { io, home })).toBe(0);
    expect(prompts).toEqual(["passphrase of the fleet CA key: "]);

    // From a 0600 file named in the config.
    const file = join(tmp(), "pass");
    writeFileSync(file, PASS + "\n", { mode: 0o600 });
    writeFileSync(join(home, "config.toml"), `ca_passphrase_file = ${JSON.stringify(file)}\n`);
    expect(await pkiCommand.run(["revoke", "lou"], { io: bufferIo(), home })).toBe(0);
    expect(pkiCommand.help).not.toMatch(/--ca-passphrase\b/);
  });

  it("init-pki --encrypt-ca-key refuses a home that already has a CA key, and mismatched typing", async () => {
    const home = join(tmp(), "ca");
    await initPkiCommand.run(["--name", "ca"], { io: bufferIo(), home });
    const again = join(tmp(), "ca2");
    const io = { ...bufferIo(), askSecret: async (p: string) => (p.startsWith("new") ? PASS : PASS + "x") };
    const differ = await failure(initPkiCommand.run(["--name", "ca2", "--encrypt-ca-key"], { io, home: again }));
    expect(differ.message).toBe("the two passphrases differ; nothing was changed");
    expect(existsSync(homePaths(again).caKey)).toBe(false);
    const noTerminal = await failure(
      initPkiCommand.run(["--name", "ca2", "--encrypt-ca-key"], { io: bufferIo(), home: again }),
    );
    expect(noTerminal.exitCode).toBe(2);
    // The CA key stays when the node's own identity is gone: a new node identity must not re-key it silently.
    rmSync(homePaths(home).nodeCert);
    rmSync(homePaths(home).nodeKey);
    const withCa = await failure(
      initPkiCommand.run(["--name", "other", "--encrypt-ca-key"], {
        io: bufferIo({ A2A_NODE_CA_PASSPHRASE: PASS }),
        home,
      }),
    );
    expect(withCa.hint).toBe("encrypt it with 'a2a-node pki protect-ca-key'");
  });

  it("pki protect-ca-key encrypts an existing key", async () => {
    const home = join(tmp(), "ca");
    await initPkiCommand.run(["--name", "ca"], { io: bufferIo(), home });
    const r = await pki(["protect-ca-key"], home).catch((e) => e);
    expect(r).toBeInstanceOf(CliError);
    const io = bufferIo({ A2A_NODE_CA_PASSPHRASE: PASS });
    expect(await pkiCommand.run(["protect-ca-key"], { io, home })).toBe(0);
    expect(io.out()).toContain(`encrypted ${homePaths(home).caKey}\n`);
    expect(readFileSync(homePaths(home).caKey, "utf8")).toMatch(/ENCRYPTED PRIVATE KEY/);
    expect(statSync(homePaths(home).caKey).mode & 0o777).toBe(0o600);
  });
});
