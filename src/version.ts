/**
 * The version baked into the binary at build time (scripts/build.ts defines A2A_NODE_VERSION); when run from
 * source it falls back to package.json's.
 */
declare const A2A_NODE_BUILD_VERSION: string | undefined;

import pkg from "../package.json" with { type: "json" };

export const VERSION: string = typeof A2A_NODE_BUILD_VERSION === "string" ? A2A_NODE_BUILD_VERSION : pkg.version;
