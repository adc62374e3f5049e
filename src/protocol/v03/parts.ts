import { A2AError } from "../errors";
import { isObj, bad, absent, optString, optObject } from "../field-checks";
import type { Part } from "../types";
import type { V03TextPart, V03FileWithBytes, V03FileWithUri, V03FilePart, V03DataPart, V03Part } from "./shapes";
import { BASE64, compact, nonEmpty } from "./wire-checks";

/* Parts between v1.0 and v0.3. */

/**
 * v0.3 DataPart.data must be an object; a v1.0 data part may hold any JSON value. Like the SDK, a non-object
 * value travels as `{value: ...}` with this metadata flag, and the flag is undone on the way back.
 */
export const DATA_PART_COMPAT_FLAG = "data_part_compat";

export function toV03Part(p: Part): V03Part {
  const metadata = p.metadata && { ...p.metadata };
  if (p.text !== undefined) return compact<V03TextPart>({ kind: "text", text: p.text, metadata });
  if (p.raw !== undefined || p.url !== undefined) {
    const file: V03FileWithBytes | V03FileWithUri = p.raw !== undefined ? { bytes: p.raw } : { uri: p.url as string };
    if (nonEmpty(p.filename)) file.name = p.filename;
    if (nonEmpty(p.mediaType)) file.mimeType = p.mediaType;
    return compact<V03FilePart>({ kind: "file", file, metadata });
  }
  if (p.data !== undefined) {
    if (isObj(p.data)) return compact<V03DataPart>({ kind: "data", data: p.data, metadata });
    return { kind: "data", data: { value: p.data }, metadata: { ...metadata, [DATA_PART_COMPAT_FLAG]: true } };
  }
  throw A2AError.internal("cannot express a part without text, raw, url or data in A2A v0.3");
}

export function fromV03Part(p: unknown, where: string): Part {
  if (!isObj(p)) throw bad(`${where} must be an object`);
  const metadata = optObject(p, "metadata", where);
  switch (p.kind) {
    case "text":
      if (typeof p.text !== "string") throw bad(`${where}.text must be a string`);
      return compact<Part>({ text: p.text, metadata: metadata && { ...metadata } });
    case "file": {
      const f = p.file;
      if (!isObj(f)) throw bad(`${where}.file must be an object with bytes or uri`);
      const hasBytes = !absent(f.bytes);
      const hasUri = !absent(f.uri);
      if (hasBytes === hasUri) throw bad(`${where}.file must have exactly one of bytes or uri`);
      const out: Part = {};
      if (hasBytes) {
        if (typeof f.bytes !== "string" || !BASE64.test(f.bytes)) throw bad(`${where}.file.bytes must be base64 text`);
        out.raw = f.bytes;
      } else {
        if (typeof f.uri !== "string" || f.uri.length === 0) throw bad(`${where}.file.uri must be a non-empty string`);
        out.url = f.uri;
      }
      const name = optString(f, "name", `${where}.file`);
      const mimeType = optString(f, "mimeType", `${where}.file`);
      if (name) out.filename = name;
      if (mimeType) out.mediaType = mimeType;
      if (metadata) out.metadata = { ...metadata };
      return out;
    }
    case "data": {
      if (!isObj(p.data)) throw bad(`${where}.data must be an object`);
      let data: unknown = p.data;
      let md = metadata && { ...metadata };
      if (md && md[DATA_PART_COMPAT_FLAG] === true) {
        if ("value" in p.data) data = p.data.value;
        delete md[DATA_PART_COMPAT_FLAG];
        if (Object.keys(md).length === 0) md = undefined;
      }
      return compact<Part>({ data, metadata: md });
    }
    default:
      throw bad(`${where}.kind must be "text", "file" or "data"`);
  }
}
