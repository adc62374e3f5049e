/**
 * The PeerClient contract (peer-client-contract.ts) run against both clients, each against the same real node
 * (beta, started in-process with the conformance executor), called as alpha over mutual TLS. Last, the words
 * of the errors are compared across the two: the same call fails the same way on either binding.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonRpcClient } from "../../src/client/jsonrpc-client";
import type { PeerClient } from "../../src/client/peer-client";
import { HttpJsonClient } from "../../src/client/http-json-client";
import { mtlsFetch } from "../../src/client/mtls-fetch";
import { DEFAULTS } from "../../src/config";
import { createLogger } from "../../src/log";
import { startNode, type RunningNode } from "../../src/node";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { errorWords, peerClientContract } from "./peer-client-contract";

let fleet: Fleet;
let beta: RunningNode;
let urls: { JSONRPC: string; "HTTP+JSON": string };

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta"]);
  const quiet = createLogger(() => {}, "warn");
  beta = await startNode(fleet.homes.beta, { ...DEFAULTS, host: "127.0.0.1", port: 0, executor: "conformance" }, quiet);
  const card = await new JsonRpcClient(beta.url, fetchAsAlpha()).getAgentCard(beta.url);
  const url = (binding: string) => card.supportedInterfaces.find((i) => i.protocolBinding === binding)!.url;
  urls = { JSONRPC: url("JSONRPC"), "HTTP+JSON": url("HTTP+JSON") };
});
afterAll(async () => {
  await beta?.stop();
  fleet?.cleanup();
});

const fetchAsAlpha = () => mtlsFetch(fleet.identity("alpha"), { name: "beta" });
const jsonRpc = (): PeerClient => new JsonRpcClient(urls.JSONRPC, fetchAsAlpha());
const httpJson = (): PeerClient => new HttpJsonClient(urls["HTTP+JSON"], fetchAsAlpha());

peerClientContract({ name: "JsonRpcClient (JSON-RPC)", binding: "JSONRPC", client: jsonRpc });
peerClientContract({ name: "HttpJsonClient (HTTP+JSON)", binding: "HTTP+JSON", client: httpJson });

describe("PeerClient: the two bindings side by side", () => {
  it("fail the same calls with the same code and the same words", async () => {
    expect(await errorWords(httpJson())).toEqual(await errorWords(jsonRpc()));
  });
});
