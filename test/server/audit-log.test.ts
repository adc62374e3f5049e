import { describe, expect, it } from "vitest";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AuditLog, type AuditCall } from "../../src/server/audit-log";
import { tempDir } from "../helpers/temp-dir";

const tmp = () => tempDir("a2a-audit-");
const call = (n: number): AuditCall => ({
  peer: "beta",
  fingerprint: "AB:CD",
  binding: "jsonrpc",
  method: "GetTask",
  taskId: `task-${n}`,
  outcome: "ok",
  ms: 1.23456,
});
const lines = (path: string) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));

describe("the audit log", () => {
  it("writes one JSON line per call and per refusal, 0600, in order", () => {
    const path = join(tmp(), "audit.jsonl");
    const log = new AuditLog({ path, maxBytes: 1 << 20, keep: 2 });
    log.call(call(1));
    log.refused({ kind: "expired", reason: "certificate has expired", remote: "127.0.0.1" });
    log.call({ ...call(2), outcome: "denied", code: -32000 });
    log.close();
    const got = lines(path);
    expect(got).toHaveLength(3);
    expect(got[0]).toMatchObject({
      event: "call",
      peer: "beta",
      fingerprint: "AB:CD",
      method: "GetTask",
      taskId: "task-1",
      outcome: "ok",
      ms: 1.235,
    });
    expect(new Date(got[0].time).toISOString()).toBe(got[0].time);
    expect(got[1]).toMatchObject({
      event: "refused",
      kind: "expired",
      reason: "certificate has expired",
      remote: "127.0.0.1",
    });
    expect(got[2]).toMatchObject({ outcome: "denied", code: -32000, taskId: "task-2" });
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it("buffers lines until the timer, the size threshold or close: nothing is written on the call itself", async () => {
    const path = join(tmp(), "audit.jsonl");
    const one = JSON.stringify({ time: new Date().toISOString(), event: "call", ...call(1), ms: 1.235 }).length + 1;
    const log = new AuditLog({ path, maxBytes: 1 << 20, keep: 1, flushMs: 10_000, flushBytes: one * 3 + 1 });
    log.call(call(1));
    expect(readFileSync(path, "utf8")).toBe("");
    for (let i = 2; i <= 4; i++) log.call(call(i)); // the fourth passes flushBytes: all are written at once
    expect(lines(path)).toHaveLength(4);
    log.call(call(5));
    expect(lines(path)).toHaveLength(4);
    log.close();
    expect(lines(path)).toHaveLength(5);
    log.call(call(6)); // after close: dropped, no error
    expect(lines(path)).toHaveLength(5);
  });

  it("rotates before a line would pass max bytes, and keeps only `keep` old files", () => {
    const path = join(tmp(), "audit.jsonl");
    const one = JSON.stringify({ time: new Date().toISOString(), event: "call", ...call(100), ms: 1.235 }).length + 1;
    const log = new AuditLog({ path, maxBytes: one * 3, keep: 2 });
    for (let i = 100; i < 110; i++) log.call(call(i));
    log.close();
    // 10 lines, 3 to a file: 3 + 3 + 3 + 1; the oldest file went.
    expect(lines(path).map((l) => l.taskId)).toEqual(["task-109"]);
    expect(lines(`${path}.1`).map((l) => l.taskId)).toEqual(["task-106", "task-107", "task-108"]);
    expect(lines(`${path}.2`).map((l) => l.taskId)).toEqual(["task-103", "task-104", "task-105"]);
    expect(existsSync(`${path}.3`)).toBe(false);
    for (const p of [path, `${path}.1`, `${path}.2`]) {
      expect(statSync(p).size).toBeLessThanOrEqual(one * 3);
      expect(statSync(p).mode & 0o777).toBe(0o600);
    }
  });

  it("counts what the file already holds, and with keep 0 starts afresh instead", () => {
    const path = join(tmp(), "audit.jsonl");
    writeFileSync(path, "x".repeat(900) + "\n");
    chmodSync(path, 0o644);
    const log = new AuditLog({ path, maxBytes: 1000, keep: 0 });
    expect(statSync(path).mode & 0o777).toBe(0o600); // an existing file is made private on open
    log.call(call(1));
    log.close();
    expect(lines(path).map((l) => l.taskId)).toEqual(["task-1"]);
    expect(existsSync(`${path}.1`)).toBe(false);
  });

  it("opens its path again on reopen (SIGHUP): a file moved away is started afresh", () => {
    const path = join(tmp(), "audit.jsonl");
    const log = new AuditLog({ path, maxBytes: 1 << 20, keep: 1 });
    log.call(call(1));
    log.flush();
    renameSync(path, `${path}.moved`);
    log.call(call(2));
    log.reopen(); // writes what it holds to the file it had open, then takes the path again
    log.call(call(3));
    log.close();
    expect(lines(`${path}.moved`).map((l) => l.taskId)).toEqual(["task-1", "task-2"]);
    expect(lines(path).map((l) => l.taskId)).toEqual(["task-3"]);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it("writes a line longer than max bytes whole, into a file of its own", () => {
    const path = join(tmp(), "audit.jsonl");
    const log = new AuditLog({ path, maxBytes: 50, keep: 3 });
    log.call(call(1));
    log.call(call(2));
    log.close();
    expect(lines(path).map((l) => l.taskId)).toEqual(["task-2"]);
    expect(lines(`${path}.1`).map((l) => l.taskId)).toEqual(["task-1"]);
  });

  it("reports writes that fail once per run of failures, drops those lines, and says when it works again", () => {
    const dir = tmp();
    const path = join(dir, "audit.jsonl");
    const errors: unknown[] = [];
    const recovered: number[] = [];
    const log = new AuditLog({
      path,
      maxBytes: 100,
      keep: 1,
      onError: (e) => errors.push(e),
      onRecovered: (n) => recovered.push(n),
    });
    log.call(call(1));
    log.flush();
    // The folder goes away: rotating (a rename into it) fails; the lines are dropped, the log lives on.
    rmSync(dir, { recursive: true, force: true });
    for (const n of [2, 3]) {
      log.call(call(n));
      log.flush();
    }
    expect(errors).toHaveLength(1);
    expect((errors[0] as NodeJS.ErrnoException).code).toBe("ENOENT");
    mkdirSync(dir);
    log.call(call(4));
    log.flush();
    expect(recovered).toEqual([2]);
    log.close();
    expect(lines(path).map((l) => l.taskId)).toEqual(["task-4"]);
  });
});
