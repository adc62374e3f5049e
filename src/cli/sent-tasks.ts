/**
 * Which peer each task sent from this home went to, so `status --task-id ID` and `cancel --task-id ID` need no
 * --agent: a task id is the peer's, and nothing in it says which peer that is. One JSON line per task in
 * HOME/sent-tasks.jsonl (0600; ids and peer names only, never what a task says), the newest last; the file keeps
 * the last KEEP tasks, so it stays small whatever is sent.
 */
import { appendFileSync, chmodSync, existsSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const FILE = "sent-tasks.jsonl";
const KEEP = 1000;
/** Trimmed back to KEEP lines once it holds about twice as many (a line is ~80 bytes). */
const TRIM_BYTES = KEEP * 2 * 80;

interface SentTask {
  id: string;
  /** As later commands take it in --agent: the peer's name, or the URL given. */
  agent: string;
}

/** Notes that task `id` went to `agent`. Best effort: a home that cannot be written to must not fail a sent task. */
export function rememberSentTask(home: string, id: string, agent: string): void {
  const path = join(home, FILE);
  try {
    appendFileSync(path, `${JSON.stringify({ id, agent } satisfies SentTask)}\n`, { mode: 0o600 });
    if (statSync(path).size > TRIM_BYTES) {
      const kept = readFileSync(path, "utf8").split("\n").filter(Boolean).slice(-KEEP);
      writeFileSync(`${path}.tmp`, `${kept.join("\n")}\n`, { mode: 0o600 });
      renameSync(`${path}.tmp`, path);
    }
    chmodSync(path, 0o600);
  } catch {
    // The send itself succeeded; status and cancel then need --agent, as they say.
  }
}

/** The --agent task `id` was sent to from this home, if it was (the newest record wins). */
export function sentTaskAgent(home: string, id: string): string | undefined {
  const path = join(home, FILE);
  if (!existsSync(path)) return undefined;
  const lines = readFileSync(path, "utf8").split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!lines[i].includes(id)) continue;
    try {
      const t = JSON.parse(lines[i]) as SentTask;
      if (t.id === id && typeof t.agent === "string") return t.agent;
    } catch {
      // A line cut short by a crash mid-write: skip it.
    }
  }
  return undefined;
}
