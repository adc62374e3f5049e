import type { FetchFn } from "./peer-client";

/** A fetch that requests A2A extensions, and what the server said it activated. */
export interface ExtensionsFetch {
  fetch: FetchFn;
  /** The URIs of the last answer's A2A-Extensions header (undefined before any answer). */
  activated(): string[] | undefined;
}

/**
 * Names `uris` in the A2A-Extensions header of every request (A2A v1.0: comma-separated), and reads the
 * header of each answer, where the server lists the ones it activated. Extensions ride on the fetch, so both
 * bindings' clients carry them alike.
 */
export function extensionsFetch(inner: FetchFn, uris: string[]): ExtensionsFetch {
  let last: string[] | undefined;
  return {
    async fetch(url, init) {
      const headers = new Headers(init.headers);
      headers.set("a2a-extensions", uris.join(","));
      const res = await inner(url, { ...init, headers });
      const echoed = res.headers.get("a2a-extensions");
      last = echoed
        ? echoed
            .split(",")
            .map((u) => u.trim())
            .filter(Boolean)
        : [];
      return res;
    },
    activated: () => last,
  };
}
