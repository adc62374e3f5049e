/**
 * Reads a proto3 file into a Schema: top-level messages (fields, oneofs, maps, `optional`, `repeated`), enums
 * and services. Options, imports and comments are skipped. It is enough for the spec's a2a.proto, which is
 * why it is small; a construct it does not know (nested messages, `reserved`, extensions) is an error rather
 * than a silent gap. Used at build time (scripts/generate-grpc-schema.ts) and by the schema freshness test.
 */
import { jsonName, SCALARS, type FieldDescriptor, type MessageDescriptor, type Scalar, type Schema } from "./schema";

export class ProtoParseError extends Error {
  override name = "ProtoParseError";
}

function tokenize(text: string): string[] {
  const noComments = text.replace(/\/\*[\s\S]*?\*\//g, " ").replace(/\/\/[^\n]*/g, " ");
  return noComments.match(/"(?:[^"\\]|\\.)*"|[A-Za-z_][\w.]*|-?\d+|[{}[\]()<>=;,:]/g) ?? [];
}

class Tokens {
  private i = 0;
  constructor(private readonly list: string[]) {}
  peek(): string | undefined {
    return this.list[this.i];
  }
  next(): string {
    const t = this.list[this.i++];
    if (t === undefined) throw new ProtoParseError("unexpected end of file");
    return t;
  }
  expect(t: string): void {
    const got = this.next();
    if (got !== t) throw new ProtoParseError(`expected "${t}", got "${got}" (token ${this.i})`);
  }
  /** Skips a balanced group that starts at the current token (`{`, `[` or `(`); returns its tokens. */
  skipGroup(): string[] {
    const start = this.i;
    const open = this.next();
    const close = { "{": "}", "[": "]", "(": ")" }[open];
    if (!close) throw new ProtoParseError(`expected a group, got "${open}"`);
    let depth = 1;
    while (depth > 0) {
      const t = this.next();
      if (t === open) depth++;
      else if (t === close) depth--;
    }
    return this.list.slice(start, this.i);
  }
  /** Skips to just past the next `;` at this level (an `option` or `import` statement). */
  skipStatement(): void {
    for (;;) {
      const t = this.peek();
      if (t === "{" || t === "[" || t === "(") this.skipGroup();
      else if (this.next() === ";") return;
    }
  }
}

export function parseProto(text: string): Schema {
  const tk = new Tokens(tokenize(text));
  let pkg = "";
  const messages: Record<string, { fields: RawField[] }> = {};
  const enums: Schema["enums"] = {};
  const services: Schema["services"] = {};
  const qualify = (name: string) => (pkg ? `${pkg}.${name}` : name);
  while (tk.peek() !== undefined) {
    const t = tk.next();
    if (t === "syntax" || t === "import" || t === "option") tk.skipStatement();
    else if (t === "package") {
      pkg = tk.next();
      tk.expect(";");
    } else if (t === "message") {
      const name = tk.next();
      messages[qualify(name)] = { fields: parseMessageBody(tk) };
    } else if (t === "enum") {
      const name = tk.next();
      enums[qualify(name)] = { name: qualify(name), values: parseEnumBody(tk) };
    } else if (t === "service") {
      const name = tk.next();
      services[qualify(name)] = { name: qualify(name), methods: parseServiceBody(tk) };
    } else if (t === ";") continue;
    else throw new ProtoParseError(`unsupported top-level "${t}"`);
  }
  // Resolve type names now that every message and enum is known.
  const resolve = (type: string): { name: string; kind: "message" | "enum" } => {
    for (const candidate of [qualify(type), type]) {
      if (messages[candidate]) return { name: candidate, kind: "message" };
      if (enums[candidate]) return { name: candidate, kind: "enum" };
    }
    // Imported types (google.protobuf.*) are messages the well-known schema provides.
    if (type.includes(".")) return { name: type, kind: "message" };
    throw new ProtoParseError(`unknown type "${type}"`);
  };
  const out: Schema = { messages: {}, enums, services: {} };
  for (const [name, m] of Object.entries(messages)) {
    const fields = m.fields.map((f): FieldDescriptor => {
      const base = { name: f.name, json: jsonName(f.name), no: f.no };
      if (f.mapKey) {
        const value = isScalar(f.type) ? { name: f.type, kind: "scalar" as const } : resolve(f.type);
        return { ...base, kind: "map", type: value.name, mapKey: f.mapKey, mapValueKind: value.kind };
      }
      const kind = isScalar(f.type) ? "scalar" : resolve(f.type).kind;
      const type = kind === "scalar" ? f.type : resolve(f.type).name;
      const d: FieldDescriptor = { ...base, kind, type };
      if (f.repeated) d.repeated = true;
      if (f.optional || f.oneof || kind === "message") d.presence = true;
      if (f.oneof) d.oneof = f.oneof;
      if (f.required) d.required = true;
      return d;
    });
    out.messages[name] = { name, fields } satisfies MessageDescriptor;
  }
  for (const [name, s] of Object.entries(services)) {
    const methods = s.methods.map((m) => ({ ...m, input: resolve(m.input).name, output: resolve(m.output).name }));
    out.services[name] = { name, methods };
  }
  return out;
}

interface RawField {
  name: string;
  no: number;
  type: string;
  repeated?: boolean;
  optional?: boolean;
  required?: boolean;
  oneof?: string;
  mapKey?: Scalar;
}

const isScalar = (t: string): t is Scalar => (SCALARS as readonly string[]).includes(t);

function parseMessageBody(tk: Tokens): RawField[] {
  tk.expect("{");
  const fields: RawField[] = [];
  for (;;) {
    const t = tk.peek();
    if (t === "}") {
      tk.next();
      return fields;
    }
    if (t === "option") {
      tk.skipStatement();
      continue;
    }
    if (t === "oneof") {
      tk.next();
      const oneof = tk.next();
      tk.expect("{");
      while (tk.peek() !== "}") {
        if (tk.peek() === "option") tk.skipStatement();
        else fields.push({ ...parseField(tk), oneof });
      }
      tk.next();
      continue;
    }
    if (t === "message" || t === "enum" || t === "reserved" || t === "extensions" || t === "extend") {
      throw new ProtoParseError(`unsupported "${t}" inside a message`);
    }
    fields.push(parseField(tk));
  }
}

function parseField(tk: Tokens): RawField {
  let t = tk.next();
  const field: Partial<RawField> = {};
  if (t === "repeated") {
    field.repeated = true;
    t = tk.next();
  } else if (t === "optional") {
    field.optional = true;
    t = tk.next();
  }
  if (t === "map") {
    tk.expect("<");
    const key = tk.next();
    if (!isScalar(key)) throw new ProtoParseError(`map key type "${key}"`);
    tk.expect(",");
    field.type = tk.next();
    tk.expect(">");
    field.mapKey = key;
  } else field.type = t;
  field.name = tk.next();
  tk.expect("=");
  field.no = Number(tk.next());
  if (!Number.isInteger(field.no) || field.no < 1) throw new ProtoParseError(`field ${field.name}: bad number`);
  if (tk.peek() === "[") {
    // The one option the codec uses: google.api.field_behavior = REQUIRED marks members a reader must find.
    if (/google\.api\.field_behavior \) = REQUIRED\b/.test(tk.skipGroup().join(" "))) field.required = true;
  }
  tk.expect(";");
  return field as RawField;
}

function parseEnumBody(tk: Tokens): Record<string, number> {
  tk.expect("{");
  const values: Record<string, number> = {};
  for (;;) {
    const t = tk.next();
    if (t === "}") return values;
    if (t === "option") {
      tk.skipStatement();
      continue;
    }
    tk.expect("=");
    values[t] = Number(tk.next());
    if (tk.peek() === "[") tk.skipGroup();
    tk.expect(";");
  }
}

function parseServiceBody(tk: Tokens): { name: string; input: string; output: string; serverStreaming: boolean }[] {
  tk.expect("{");
  const methods = [];
  for (;;) {
    const t = tk.next();
    if (t === "}") return methods;
    if (t === "option") {
      tk.skipStatement();
      continue;
    }
    if (t !== "rpc") throw new ProtoParseError(`unsupported "${t}" in a service`);
    const name = tk.next();
    tk.expect("(");
    let input = tk.next();
    if (input === "stream") throw new ProtoParseError(`${name}: client streaming is not supported`);
    tk.expect(")");
    tk.expect("returns");
    tk.expect("(");
    let output = tk.next();
    let serverStreaming = false;
    if (output === "stream") {
      serverStreaming = true;
      output = tk.next();
    }
    tk.expect(")");
    if (tk.peek() === "{") tk.skipGroup();
    else tk.expect(";");
    input = input.replace(/^\./, "");
    methods.push({ name, input, output, serverStreaming });
  }
}
