/**
 * Media types of the files a task carries: guessed from a file's name when it is sent, and judged when an
 * executor decides what it can pass to a model (text it can read, images it may see).
 */

const BY_EXTENSION: Record<string, string> = {
  txt: "text/plain",
  log: "text/plain",
  text: "text/plain",
  ini: "text/plain",
  conf: "text/plain",
  cfg: "text/plain",
  env: "text/plain",
  md: "text/markdown",
  markdown: "text/markdown",
  csv: "text/csv",
  tsv: "text/tab-separated-values",
  html: "text/html",
  htm: "text/html",
  css: "text/css",
  js: "text/javascript",
  mjs: "text/javascript",
  cjs: "text/javascript",
  ts: "text/x-typescript",
  tsx: "text/x-typescript",
  jsx: "text/javascript",
  py: "text/x-python",
  rb: "text/x-ruby",
  go: "text/x-go",
  rs: "text/x-rust",
  c: "text/x-c",
  h: "text/x-c",
  cc: "text/x-c++",
  cpp: "text/x-c++",
  hpp: "text/x-c++",
  java: "text/x-java",
  kt: "text/x-kotlin",
  swift: "text/x-swift",
  sh: "text/x-shellscript",
  bash: "text/x-shellscript",
  zsh: "text/x-shellscript",
  sql: "application/sql",
  diff: "text/x-diff",
  patch: "text/x-diff",
  json: "application/json",
  jsonl: "application/jsonl",
  ndjson: "application/x-ndjson",
  xml: "application/xml",
  yaml: "application/yaml",
  yml: "application/yaml",
  toml: "application/toml",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  svg: "image/svg+xml",
  bmp: "image/bmp",
  tif: "image/tiff",
  tiff: "image/tiff",
  heic: "image/heic",
  pdf: "application/pdf",
  zip: "application/zip",
  gz: "application/gzip",
  tgz: "application/gzip",
  tar: "application/x-tar",
  mp3: "audio/mpeg",
  wav: "audio/wav",
  ogg: "audio/ogg",
  mp4: "video/mp4",
  webm: "video/webm",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
};

const TEXT_APPLICATION = new Set([
  "application/json",
  "application/jsonl",
  "application/x-ndjson",
  "application/xml",
  "application/yaml",
  "application/x-yaml",
  "application/toml",
  "application/sql",
  "application/javascript",
  "application/x-sh",
]);

/** The images OpenAI-compatible vision models take (as data: URLs). */
export const MODEL_IMAGE_TYPES: readonly string[] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/** "Text/Plain; charset=utf-8" → "text/plain". */
export function essence(mediaType: string): string {
  return mediaType.split(";")[0].trim().toLowerCase();
}

/**
 * The media type of a file, from its name; for a name we do not know, from its bytes: UTF-8 text without NUL
 * bytes is text/plain, anything else application/octet-stream.
 *
 * @example guessMediaType("notes.md", bytes) === "text/markdown"
 */
export function guessMediaType(filename: string, bytes: Uint8Array): string {
  const dot = filename.lastIndexOf(".");
  const known = dot > 0 ? BY_EXTENSION[filename.slice(dot + 1).toLowerCase()] : undefined;
  if (known) return known;
  return decodeText(bytes) !== undefined ? "text/plain" : "application/octet-stream";
}

/** Whether a model can read this media type as text. */
export function isTextType(mediaType: string): boolean {
  const e = essence(mediaType);
  return e.startsWith("text/") || TEXT_APPLICATION.has(e) || e.endsWith("+json") || e.endsWith("+xml");
}

/** The bytes as UTF-8 text, or undefined when they are not (invalid UTF-8, or NUL bytes: a binary file). */
export function decodeText(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
