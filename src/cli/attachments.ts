import { statSync } from "node:fs";
import { basename } from "node:path";
import type { Part } from "../protocol/types";
import { guessMediaType } from "../protocol/media-types";
import { CliError, ExitCode, UsageError } from "./errors";
import type { Io } from "./io";

/**
 * The most file bytes one message may carry: base64 makes them a third larger, and no node accepts a body
 * over 1 GiB (max_body's upper bound). The peer's own limit (max_body, 1 MiB by default) is usually lower;
 * it answers HTTP 413 naming it, which send reports with the sizes.
 */
export const MAX_FILE_BYTES = 768 * 1024 * 1024;

/** `--file PATH` (repeatable): each file as an A2A file part, its bytes in base64 with its name and media type. */
export async function readAttachments(paths: string[]): Promise<Part[]> {
  // Every file is checked before any is read: a typo in the last --file costs no reading of the first.
  let total = 0;
  for (const path of paths) total += fileSize(path);
  if (total > MAX_FILE_BYTES)
    throw new UsageError(
      `the files come to ${total} bytes; a message carries at most ${MAX_FILE_BYTES} (and a peer, by default, 1 MiB in all)`,
    );
  const parts: Part[] = [];
  for (const path of paths) {
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await Bun.file(path).arrayBuffer());
    } catch (err) {
      throw unreadable(path, err);
    }
    const filename = basename(path);
    parts.push({ raw: Buffer.from(bytes).toString("base64"), filename, mediaType: guessMediaType(filename, bytes) });
  }
  return parts;
}

function fileSize(path: string): number {
  let st;
  try {
    st = statSync(path);
  } catch (err) {
    throw unreadable(path, err);
  }
  if (st.isDirectory())
    throw new UsageError(
      `--file ${path} is a directory; send its files one by one (--file is repeatable), or an archive of it`,
    );
  if (!st.isFile()) throw new UsageError(`--file ${path} is not a regular file`);
  return st.size;
}

function unreadable(path: string, err: unknown): CliError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return new UsageError(`--file ${path}: no such file`);
  if (code === "EACCES")
    return new CliError(
      `--file ${path}: permission denied`,
      ExitCode.Failure,
      "check the file's mode, or run as a user who may read it",
    );
  return new CliError(`--file ${path}: ${(err as Error).message}`);
}

/** `--task TEXT`, or `--task -`: the text from standard input, which must hold some. */
export async function readTaskText(flag: string, io: Io): Promise<string> {
  if (flag !== "-") {
    if (flag.trim() === "") throw new UsageError("--task is empty");
    return flag;
  }
  if (!io.readStdin) throw new UsageError("--task -: this command has no standard input to read");
  if (io.tty?.stdin) io.stderr.write("reading the task from standard input; end it with Ctrl-D\n");
  const text = await io.readStdin();
  if (text.trim() === "")
    throw new UsageError(
      "--task -: standard input was empty (pipe the task text in, e.g. 'echo TEXT | a2a-node send ... --task -')",
    );
  return text;
}
