import { describe, expect, it } from "vitest";
import { SETTINGS } from "../../src/config";
import { NODE_DEFAULT_PORT, normalizePeerUrl } from "../../src/client/peer-url";

describe("peer URLs", () => {
  it("the default port is the one serve listens on", () => {
    expect(NODE_DEFAULT_PORT).toBe(SETTINGS.port.default);
  });

  it.each([
    ["https://10.0.0.7:9443", "https://10.0.0.7:9443", undefined],
    ["https://beta.lan:8443/", "https://beta.lan:8443", undefined],
    ["https://beta.lan:443", "https://beta.lan:443", undefined],
    ["https://[fd00::7]:9443", "https://[fd00::7]:9443", undefined],
    ["https://beta.lan:9443/a2a/", "https://beta.lan:9443/a2a", undefined],
    ["https://10.0.0.7", "https://10.0.0.7:9443", "no port given: using the node default 9443 (https://10.0.0.7:9443)"],
    ["HTTPS://Beta.LAN", "https://beta.lan:9443", "no port given: using the node default 9443 (https://beta.lan:9443)"],
    [
      "10.0.0.7",
      "https://10.0.0.7:9443",
      "no scheme given: using https://; no port given: using the node default 9443 (https://10.0.0.7:9443)",
    ],
    ["beta.lan:8443", "https://beta.lan:8443", "no scheme given: using https:// (https://beta.lan:8443)"],
    [
      "[fd00::7]",
      "https://[fd00::7]:9443",
      "no scheme given: using https://; no port given: using the node default 9443 (https://[fd00::7]:9443)",
    ],
  ])("%s → %s", (typed, url, note) => {
    expect(normalizePeerUrl(typed)).toEqual(note === undefined ? { url } : { url, note });
  });

  it.each([
    ["http://10.0.0.7:9443", "is plain HTTP; peers speak mutual TLS only: use https://10.0.0.7:9443"],
    ["http://10.0.0.7", "use https://10.0.0.7:9443"],
    ["ftp://10.0.0.7", "is not an https:// URL"],
    ["https://user:pw@10.0.0.7:9443", "carries a user name or password"],
    ["https://10.0.0.7:9443/?x=1", "has a query or fragment"],
    ["https://10.0.0.7:99999", "is not a URL"],
    ["not a url", "is not a URL"],
    ["", "is not a URL"],
    ["beta/path", "is not a URL"],
  ])("refuses %j: %s", (typed, message) => {
    expect(() => normalizePeerUrl(typed)).toThrow(message);
  });
});
