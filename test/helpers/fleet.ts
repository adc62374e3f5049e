import "reflect-metadata";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CertAndKey, createCa, initPki, installBundle, issueBundle, issueLeaf } from "../../pki";
import { homePaths, ensureHome } from "../../src/home";

export interface TlsIdentity {
  cert: string;
  key: string;
  ca: string;
}

export interface Fleet {
  root: string;
  /** Home folder of each node; the first name holds the CA key. */
  homes: Record<string, string>;
  /** The PEMs of a node, as a client would present them. */
  identity(name: string): TlsIdentity;
  /** The fleet CA's certificate and key, to sign what `pki issue` would refuse (test/helpers/crafted-certs.ts). */
  ca(): CertAndKey;
  /** An identity named `name` from another CA, which this fleet must refuse. */
  foreign(name: string): Promise<TlsIdentity>;
  cleanup(): void;
}

/**
 * A fleet made with our own PKI code, in a temp folder: the first node runs init-pki (and so holds the fleet
 * CA), the others receive bundles, as on real machines.
 */
export async function makeFleet(names: string[]): Promise<Fleet> {
  const root = mkdtempSync(join(tmpdir(), "a2a-fleet-"));
  const homes: Record<string, string> = {};
  const [first, ...rest] = names;
  homes[first] = join(root, first);
  await initPki(ensureHome(homePaths(homes[first])), { name: first });
  for (const name of rest) {
    homes[name] = join(root, name);
    const bundle = join(root, `${name}.bundle`);
    await issueBundle(homePaths(homes[first]), { name, out: bundle });
    await installBundle(ensureHome(homePaths(homes[name])), bundle);
  }
  return {
    root,
    homes,
    identity(name) {
      const p = homePaths(homes[name]);
      return {
        cert: readFileSync(p.nodeCert, "utf8"),
        key: readFileSync(p.nodeKey, "utf8"),
        ca: readFileSync(p.caCert, "utf8"),
      };
    },
    ca() {
      const p = homePaths(homes[first]);
      return { certPem: readFileSync(p.caCert, "utf8"), keyPem: readFileSync(p.caKey, "utf8") };
    },
    async foreign(name) {
      const ca = await createCa({ name: "some other fleet" });
      const leaf = await issueLeaf({ ca, name, sans: ["localhost", "127.0.0.1"] });
      // It trusts our CA (so only our server's refusal can fail the handshake), but is signed by its own.
      return { cert: leaf.certPem, key: leaf.keyPem, ca: readFileSync(homePaths(homes[first]).caCert, "utf8") };
    },
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}
