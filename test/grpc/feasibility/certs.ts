/** A throwaway CA, a server leaf and a client leaf from our own PKI code, for the feasibility probes. */
import "reflect-metadata";
import { createCa, issueLeaf } from "../../../pki";

export interface ProbeCerts {
  ca: string;
  server: { cert: string; key: string };
  client: { cert: string; key: string };
}

export async function probeCerts(): Promise<ProbeCerts> {
  const ca = await createCa({ name: "feasibility ca" });
  const server = await issueLeaf({ ca, name: "server", sans: ["localhost", "127.0.0.1"] });
  const client = await issueLeaf({ ca, name: "caller", sans: ["localhost"] });
  return {
    ca: ca.certPem,
    server: { cert: server.certPem, key: server.keyPem },
    client: { cert: client.certPem, key: client.keyPem },
  };
}

/** Prints one verdict line per probe and remembers failures for the exit code. */
export class Verdicts {
  failed = 0;
  async check(name: string, probe: () => Promise<string>): Promise<void> {
    try {
      console.log(`PASS ${name}: ${await probe()}`);
    } catch (e) {
      this.failed++;
      console.log(`FAIL ${name}: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
    }
  }
}

export function withTimeout<T>(p: Promise<T>, ms = 5000, what = "probe"): Promise<T> {
  return Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms)),
  ]);
}
