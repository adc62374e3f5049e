/**
 * Protobuf binary <-> ProtoJSON, driven by a Schema. A2A v1.0's JSON forms (src/protocol/types.ts) are the
 * ProtoJSON of a2a.proto, so a decoded gRPC request is the same object a JSON-RPC client would have sent, and
 * an answer the handler produced encodes as it is. The wire primitives are @bufbuild/protobuf's
 * BinaryReader/BinaryWriter; the walk over fields is ours, so no generated code is needed.
 *
 * ProtoJSON rules kept: camelCase names (proto names accepted on input), enums by name (an unknown number stays
 * a number), int64 as strings, bytes as base64, Timestamp as RFC 3339, Struct/Value/ListValue as plain JSON,
 * default values omitted unless the field tracks presence (`optional`, oneof members, messages). One deviation:
 * a Timestamp with whole milliseconds decodes with exactly three fraction digits (".000Z"), the form our types
 * promise, where canonical ProtoJSON would drop a zero fraction.
 */
import { BinaryReader, BinaryWriter, WireType, base64Decode, base64Encode } from "@bufbuild/protobuf/wire";
import type { FieldDescriptor, MessageDescriptor, Scalar, Schema } from "./schema";
import { EMPTY, LIST_VALUE, STRUCT, TIMESTAMP, VALUE } from "./well-known";

/** A message that cannot be decoded: the gRPC binding answers it with INVALID_ARGUMENT. */
export class DecodeError extends Error {
  override name = "DecodeError";
}

/** A value that does not fit its field: a request the caller built wrong, or a bug on our side. */
export class EncodeError extends Error {
  override name = "EncodeError";
}

export interface CodecOptions {
  /** Nested messages allowed (protobuf's own default limit is 100); deeper input is refused, not recursed into. */
  maxDepth?: number;
}

export interface DecodeOptions {
  /**
   * Fields the proto marks REQUIRED that are absent (proto3 leaves defaults off the wire) come out at their
   * defaults ("", 0, false, [], {}, an enum's zero name), so a decoded answer has every member our types
   * require (ListTasksResponse.totalSize 0, Message.parts []). A required message that is absent stays absent.
   */
  fillRequired?: boolean;
}

type Json = unknown;
type JsonObject = Record<string, unknown>;

const DEFAULT_MAX_DEPTH = 100;
const TIMESTAMP_MIN = -62135596800; // 0001-01-01T00:00:00Z
const TIMESTAMP_MAX = 253402300799; // 9999-12-31T23:59:59Z

export class ProtoCodec {
  private readonly maxDepth: number;
  private readonly byNumber = new Map<string, Map<number, FieldDescriptor>>();
  /** For the decode in progress (decoding is synchronous, so one call at a time). */
  private fillRequired = false;

  constructor(
    private readonly schema: Schema,
    options: CodecOptions = {},
  ) {
    this.maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
  }

  encode(type: string, value: Json): Uint8Array {
    const w = new BinaryWriter();
    this.writeMessage(w, type, value, 0, type);
    return w.finish();
  }

  decode(type: string, bytes: Uint8Array, options: DecodeOptions = {}): Json {
    const r = new BinaryReader(bytes);
    this.fillRequired = options.fillRequired ?? false;
    try {
      return this.readMessage(r, type, r.len, 0);
    } catch (e) {
      if (e instanceof DecodeError) throw e;
      // BinaryReader's own errors (premature EOF, bad varint, invalid UTF-8) are malformed input too.
      throw new DecodeError(`${type}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private message(type: string): MessageDescriptor {
    const d = this.schema.messages[type];
    if (!d) throw new EncodeError(`unknown message type ${type}`);
    return d;
  }

  private fieldsByNumber(type: string): Map<number, FieldDescriptor> {
    let m = this.byNumber.get(type);
    if (!m) {
      m = new Map(this.message(type).fields.map((f) => [f.no, f]));
      this.byNumber.set(type, m);
    }
    return m;
  }

  // ---- decoding -------------------------------------------------------------------------------------------

  private readMessage(r: BinaryReader, type: string, end: number, depth: number): Json {
    if (depth > this.maxDepth) throw new DecodeError(`${type}: nested deeper than ${this.maxDepth}`);
    const raw = this.readFields(r, type, end, depth);
    switch (type) {
      case STRUCT:
        return raw.fields ?? {};
      case LIST_VALUE:
        return raw.values ?? [];
      case VALUE:
        return valueOf(raw);
      case TIMESTAMP:
        return formatTimestamp(raw.seconds ?? "0", raw.nanos ?? 0);
      case EMPTY:
        return {};
      default:
        return raw;
    }
  }

  private readFields(r: BinaryReader, type: string, end: number, depth: number): JsonObject {
    const fields = this.fieldsByNumber(type);
    const out: JsonObject = {};
    const oneofSet = new Map<string, string>();
    while (r.pos < end) {
      const [no, wt] = r.tag();
      const f = fields.get(no);
      if (!f) {
        r.skip(wt, no);
        continue;
      }
      if (f.kind === "map") {
        if (wt !== WireType.LengthDelimited) {
          throw new DecodeError(`${type}.${f.name}: wire type ${wt} for a map entry`);
        }
        const [k, v] = this.readMapEntry(r, f, depth, type);
        const map = (out[f.json] ??= {}) as JsonObject;
        map[k] = v;
        continue;
      }
      const packable = f.kind !== "message" && f.type !== "string" && f.type !== "bytes";
      if (f.repeated && packable && wt === WireType.LengthDelimited) {
        // A packed run of numbers: accepted whichever way the sender wrote it, as protobuf requires.
        const len = r.uint32();
        const stop = r.pos + len;
        const list = (out[f.json] ??= []) as Json[];
        while (r.pos < stop) list.push(this.readSingle(r, f, type, depth));
        continue;
      }
      if (wt !== wireTypeOf(f)) throw new DecodeError(`${type}.${f.name}: wire type ${wt}, expected ${wireTypeOf(f)}`);
      const v = this.readSingle(r, f, type, depth);
      if (f.repeated) {
        ((out[f.json] ??= []) as Json[]).push(v);
        continue;
      }
      if (f.oneof) {
        const previous = oneofSet.get(f.oneof);
        if (previous && previous !== f.json) delete out[previous];
        oneofSet.set(f.oneof, f.json);
      }
      const atDefault =
        f.kind === "enum" ? this.schema.enums[f.type]?.values[v as string] === 0 || v === 0 : isDefault(f, v);
      if (!f.presence && atDefault) delete out[f.json];
      else out[f.json] = v;
    }
    if (r.pos !== end) throw new DecodeError(`${type}: a field ran past the end of its message`);
    if (this.fillRequired) this.fillDefaults(type, out);
    return out;
  }

  private fillDefaults(type: string, out: JsonObject): void {
    for (const f of this.message(type).fields) {
      if (f.json in out || !f.required) continue;
      if (f.repeated) out[f.json] = [];
      else if (f.presence) continue;
      else if (f.kind === "map") out[f.json] = {};
      else if (f.kind === "enum") {
        out[f.json] = Object.entries(this.schema.enums[f.type]?.values ?? {}).find(([, v]) => v === 0)?.[0] ?? 0;
      } else out[f.json] = defaultOf(f);
    }
  }

  private readSingle(r: BinaryReader, f: FieldDescriptor, type: string, depth: number): Json {
    if (f.kind === "message") {
      const len = r.uint32();
      const end = r.pos + len;
      if (end > r.len) throw new DecodeError(`${type}.${f.name}: length ${len} past the end of the input`);
      return this.readMessage(r, f.type, end, depth + 1);
    }
    if (f.kind === "enum") {
      const n = r.int32();
      const name = Object.entries(this.schema.enums[f.type]?.values ?? {}).find(([, v]) => v === n)?.[0];
      return name ?? n;
    }
    return readScalar(r, f.type as Scalar);
  }

  private readMapEntry(r: BinaryReader, f: FieldDescriptor, depth: number, type: string): [string, Json] {
    const len = r.uint32();
    const end = r.pos + len;
    if (end > r.len) throw new DecodeError(`${type}.${f.name}: length ${len} past the end of the input`);
    let key: Json = "";
    let value: Json = undefined;
    const valueField: FieldDescriptor = { name: "value", json: "value", no: 2, kind: f.mapValueKind!, type: f.type };
    while (r.pos < end) {
      const [no, wt] = r.tag();
      if (no === 1 && wt === scalarWireType(f.mapKey!)) key = readScalar(r, f.mapKey!);
      else if (no === 2 && wt === wireTypeOf(valueField)) value = this.readSingle(r, valueField, type, depth);
      else r.skip(wt, no);
    }
    if (r.pos !== end) throw new DecodeError(`${type}.${f.name}: a map entry ran past its end`);
    if (value === undefined) {
      const empty = new BinaryReader(new Uint8Array());
      value = f.mapValueKind === "message" ? this.readMessage(empty, f.type, 0, depth + 1) : defaultOf(valueField);
    }
    return [String(key), value];
  }

  // ---- encoding -------------------------------------------------------------------------------------------

  private writeMessage(w: BinaryWriter, type: string, value: Json, depth: number, path: string): void {
    if (depth > this.maxDepth) throw new EncodeError(`${path}: nested deeper than ${this.maxDepth}`);
    switch (type) {
      case STRUCT:
        return this.writeFields(w, STRUCT, { fields: asObject(value, path) }, depth, path);
      case LIST_VALUE:
        if (!Array.isArray(value)) throw new EncodeError(`${path}: expected an array`);
        return this.writeFields(w, LIST_VALUE, { values: value }, depth, path);
      case VALUE:
        return this.writeFields(w, VALUE, toValue(value, path), depth, path);
      case TIMESTAMP:
        return this.writeFields(w, TIMESTAMP, parseTimestamp(value, path), depth, path);
      default:
        return this.writeFields(w, type, asObject(value, path), depth, path);
    }
  }

  private writeFields(w: BinaryWriter, type: string, obj: JsonObject, depth: number, path: string): void {
    for (const f of this.message(type).fields) {
      let v = obj[f.json];
      if (v === undefined && f.json !== f.name) v = obj[f.name];
      // ProtoJSON null means "the default", except for a Value, where it is the JSON null itself.
      if (v === undefined || (v === null && f.type !== VALUE)) continue;
      const at = `${path}.${f.json}`;
      if (f.kind === "map") {
        for (const [k, mv] of Object.entries(asObject(v, at))) {
          if (mv === undefined) continue;
          w.tag(f.no, WireType.LengthDelimited).fork();
          writeScalar(w, 1, f.mapKey!, mapKeyOf(k, f.mapKey!, at), at);
          const kind = f.mapValueKind!;
          const valueField: FieldDescriptor = { name: "value", json: "value", no: 2, kind, type: f.type };
          this.writeSingle(w, { ...valueField, presence: true }, mv, depth, `${at}.${k}`);
          w.join();
        }
        continue;
      }
      if (f.repeated) {
        if (!Array.isArray(v)) throw new EncodeError(`${at}: expected an array`);
        v.forEach((item, i) => this.writeSingle(w, { ...f, presence: true }, item, depth, `${at}[${i}]`));
        continue;
      }
      this.writeSingle(w, f, v, depth, at);
    }
  }

  private writeSingle(w: BinaryWriter, f: FieldDescriptor, v: Json, depth: number, at: string): void {
    if (f.kind === "message") {
      w.tag(f.no, WireType.LengthDelimited).fork();
      this.writeMessage(w, f.type, v, depth + 1, at);
      w.join();
      return;
    }
    if (f.kind === "enum") {
      const n = this.enumNumber(f.type, v, at);
      if (n !== 0 || f.presence) w.tag(f.no, WireType.Varint).int32(n);
      return;
    }
    if (!f.presence && isDefault(f, v)) return;
    writeScalar(w, f.no, f.type as Scalar, v, at);
  }

  private enumNumber(type: string, v: Json, at: string): number {
    if (typeof v === "number" && Number.isInteger(v)) return v;
    const n = typeof v === "string" ? this.schema.enums[type]?.values[v] : undefined;
    if (n === undefined) throw new EncodeError(`${at}: ${JSON.stringify(v)} is not a value of ${type}`);
    return n;
  }
}

function wireTypeOf(f: FieldDescriptor): WireType {
  if (f.kind === "message" || f.kind === "map") return WireType.LengthDelimited;
  if (f.kind === "enum") return WireType.Varint;
  return scalarWireType(f.type as Scalar);
}

function scalarWireType(t: Scalar): WireType {
  switch (t) {
    case "string":
    case "bytes":
      return WireType.LengthDelimited;
    case "double":
      return WireType.Bit64;
    case "float":
      return WireType.Bit32;
    default:
      return WireType.Varint;
  }
}

function readScalar(r: BinaryReader, t: Scalar): Json {
  switch (t) {
    case "string":
      return r.string(true);
    case "bytes":
      return base64Encode(r.bytes());
    case "bool":
      return r.bool();
    case "int32":
      return r.int32();
    case "uint32":
      return r.uint32();
    case "int64":
      return String(r.int64());
    case "uint64":
      return String(r.uint64());
    case "double":
      return r.double();
    case "float":
      return r.float();
  }
}

function writeScalar(w: BinaryWriter, no: number, t: Scalar, v: Json, at: string): void {
  w.tag(no, scalarWireType(t));
  switch (t) {
    case "string":
      if (typeof v !== "string") throw new EncodeError(`${at}: expected a string`);
      w.string(v);
      return;
    case "bytes":
      if (typeof v !== "string") throw new EncodeError(`${at}: expected base64 text`);
      w.bytes(decodeBase64(v, at));
      return;
    case "bool":
      if (typeof v !== "boolean") throw new EncodeError(`${at}: expected true or false`);
      w.bool(v);
      return;
    case "int32":
      w.int32(integer(v, -0x80000000, 0x7fffffff, at));
      return;
    case "uint32":
      w.uint32(integer(v, 0, 0xffffffff, at));
      return;
    case "int64":
    case "uint64": {
      const s = typeof v === "number" && Number.isSafeInteger(v) ? String(v) : typeof v === "bigint" ? String(v) : v;
      if (typeof s !== "string" || !/^-?\d{1,20}$/.test(s) || (t === "uint64" && s.startsWith("-"))) {
        throw new EncodeError(`${at}: expected an integer`);
      }
      if (t === "int64") w.int64(s);
      else w.uint64(s);
      return;
    }
    case "double":
    case "float": {
      const special: Record<string, number> = { NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity };
      const n = typeof v === "number" ? v : typeof v === "string" && Object.hasOwn(special, v) ? special[v] : undefined;
      if (n === undefined) throw new EncodeError(`${at}: expected a number`);
      if (t === "double") w.double(n);
      else w.float(n);
      return;
    }
  }
}

function integer(v: Json, min: number, max: number, at: string): number {
  const n = typeof v === "string" && /^-?\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== "number" || !Number.isInteger(n) || n < min || n > max) {
    throw new EncodeError(`${at}: expected an integer from ${min} to ${max}`);
  }
  return n;
}

function mapKeyOf(k: string, t: Scalar, at: string): Json {
  if (t === "string") return k;
  if (t === "bool") {
    if (k !== "true" && k !== "false") throw new EncodeError(`${at}: map key ${k} is not a bool`);
    return k === "true";
  }
  return k;
}

function decodeBase64(s: string, at: string): Uint8Array {
  // ProtoJSON accepts standard and URL-safe alphabets, with or without padding.
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(s)) throw new EncodeError(`${at}: not base64`);
  return base64Decode(s);
}

function isDefault(f: FieldDescriptor, v: Json): boolean {
  if (f.kind === "enum") return v === 0;
  switch (f.type as Scalar) {
    case "string":
    case "bytes":
      return v === "";
    case "bool":
      return v === false;
    case "int64":
    case "uint64":
      return v === "0" || v === 0;
    default:
      return v === 0 && !Object.is(v, -0);
  }
}

function defaultOf(f: FieldDescriptor): Json {
  if (f.kind === "enum") return 0;
  switch (f.type as Scalar) {
    case "string":
    case "bytes":
      return "";
    case "bool":
      return false;
    case "int64":
    case "uint64":
      return "0";
    default:
      return 0;
  }
}

function asObject(v: Json, at: string): JsonObject {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new EncodeError(`${at}: expected an object`);
  return v as JsonObject;
}

/** A decoded google.protobuf.Value's fields -> the JSON value it stands for. */
function valueOf(raw: JsonObject): Json {
  if ("nullValue" in raw) return null;
  if ("numberValue" in raw) return raw.numberValue;
  if ("stringValue" in raw) return raw.stringValue;
  if ("boolValue" in raw) return raw.boolValue;
  if ("structValue" in raw) return raw.structValue;
  if ("listValue" in raw) return raw.listValue;
  // A Value with no kind set has no JSON form; null is the closest reading of "nothing".
  return null;
}

/** A JSON value -> the fields of the google.protobuf.Value that carries it. */
function toValue(v: Json, at: string): JsonObject {
  if (v === null) return { nullValue: "NULL_VALUE" };
  switch (typeof v) {
    case "number":
      if (!Number.isFinite(v)) throw new EncodeError(`${at}: ${v} has no JSON form`);
      return { numberValue: v };
    case "string":
      return { stringValue: v };
    case "boolean":
      return { boolValue: v };
    case "object":
      return Array.isArray(v) ? { listValue: v } : { structValue: v };
    default:
      throw new EncodeError(`${at}: a ${typeof v} is not JSON`);
  }
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;

function parseTimestamp(v: Json, at: string): JsonObject {
  const m = typeof v === "string" ? RFC3339.exec(v) : null;
  if (!m) throw new EncodeError(`${at}: expected an RFC 3339 timestamp`);
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  let ms = Date.UTC(+y, +mo - 1, +d, +h, +mi, +s);
  if (Number.isNaN(ms)) throw new EncodeError(`${at}: not a date`);
  if (zone !== "Z" && zone !== "z") {
    const sign = zone[0] === "-" ? -1 : 1;
    ms -= sign * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6))) * 60_000;
  }
  // Date.UTC maps years 0-99 to 1900-1999; set the year again so 0001-0099 mean what they say.
  const date = new Date(ms);
  if (+y < 100) date.setUTCFullYear(date.getUTCFullYear() - 1900);
  const seconds = Math.floor(date.getTime() / 1000);
  if (seconds < TIMESTAMP_MIN || seconds > TIMESTAMP_MAX) {
    throw new EncodeError(`${at}: outside 0001-01-01 to 9999-12-31`);
  }
  const nanos = frac ? Number(frac.padEnd(9, "0")) : 0;
  return { seconds: String(seconds), nanos };
}

function formatTimestamp(secondsText: Json, nanos: Json): string {
  const seconds = Number(secondsText);
  const n = Number(nanos);
  const secondsOk = Number.isSafeInteger(seconds) && seconds >= TIMESTAMP_MIN && seconds <= TIMESTAMP_MAX;
  if (!secondsOk || !Number.isInteger(n) || n < 0 || n > 999_999_999) {
    throw new DecodeError(`google.protobuf.Timestamp out of range (seconds ${secondsText}, nanos ${nanos})`);
  }
  const base = new Date(seconds * 1000).toISOString().slice(0, 19);
  const digits = n % 1_000_000 === 0 ? 3 : n % 1000 === 0 ? 6 : 9;
  return `${base}.${String(n).padStart(9, "0").slice(0, digits)}Z`;
}
