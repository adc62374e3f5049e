import type { AgentExtension } from "../protocol/types";
import { SettingProblem } from "./kinds";

const KNOWN = new Set(["uri", "description", "required", "params"]);

/**
 * Reads the [[extensions]] tables: the A2A extensions this node declares in its card
 * (capabilities.extensions). A client activates one by naming its URI in the A2A-Extensions header; one
 * marked `required` must be named in every message sent to the node (or the node answers -32008).
 */
export function readExtensions(v: unknown): AgentExtension[] {
  if (!Array.isArray(v)) throw new SettingProblem("must be an array of [[extensions]] tables");
  const uris = new Set<string>();
  return v.map((e, i) => {
    const at = `entry ${i + 1}:`;
    if (typeof e !== "object" || e === null || Array.isArray(e)) throw new SettingProblem(`${at} must be a table`);
    const o = e as Record<string, unknown>;
    for (const k of Object.keys(o))
      if (!KNOWN.has(k)) throw new SettingProblem(`${at} unknown key '${k}' (known: ${[...KNOWN].join(", ")})`);
    const uri = o.uri;
    // The header carries URIs comma-separated: one with a comma or a space could not be named in it.
    if (typeof uri !== "string" || !/^[A-Za-z][A-Za-z0-9+.-]*:[^\s,]+$/.test(uri))
      throw new SettingProblem(
        `${at} uri must be an absolute URI without spaces or commas (e.g. https://example.com/ext/citations/v1), got ${JSON.stringify(uri)}`,
      );
    if (uris.has(uri)) throw new SettingProblem(`${at} uri '${uri}' is declared by an earlier entry`);
    uris.add(uri);
    const ext: AgentExtension = { uri };
    if (o.description !== undefined) {
      if (typeof o.description !== "string") throw new SettingProblem(`${at} description must be a string`);
      ext.description = o.description;
    }
    if (o.required !== undefined) {
      if (typeof o.required !== "boolean") throw new SettingProblem(`${at} required must be true or false`);
      if (o.required) ext.required = true;
    }
    if (o.params !== undefined) {
      if (typeof o.params !== "object" || o.params === null || Array.isArray(o.params))
        throw new SettingProblem(`${at} params must be a table`);
      ext.params = o.params as Record<string, unknown>;
    }
    return ext;
  });
}
