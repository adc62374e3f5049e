/**
 * Child processes of the bench and what Linux says they cost. Every child is registered here so that one
 * call (on success, error or Ctrl-C) ends them all; nothing is ever found by name.
 */
import { readFileSync, statSync } from "node:fs";
import { createServer } from "node:net";
import type { Subprocess } from "bun";

/** USER_HZ: /proc times are in ticks of 10 ms on Linux (getconf CLK_TCK = 100). */
export const CLK_TCK = 100;

const children = new Set<Subprocess>();

/** Registers a just-spawned child (wrap the Bun.spawn call, which keeps its precise type). */
export function track<T extends Subprocess>(child: T): T {
  children.add(child);
  void child.exited.then(() => children.delete(child));
  return child;
}

/** SIGTERM (a2a-node stops gracefully on it), then SIGKILL if the child is still there after `graceMs`. */
export async function stop(child: Subprocess, graceMs = 3000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await child.exited;
  clearTimeout(timer);
}

export async function stopAll(): Promise<void> {
  await Promise.all([...children].map((c) => stop(c)));
}

/** For the process "exit" event, where nothing can be awaited. */
export function killAllNow(): void {
  for (const c of children) c.kill("SIGKILL");
}

/** utime + stime of every thread of `pid`, in ticks. */
export function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name (field 2) may hold spaces; count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]); // fields 14 and 15 of proc(5)
}

/**
 * Busy ticks of the whole machine (all cores) from /proc/stat: everything but idle and iowait. Minus what the
 * server and the load clients used, it shows kernel networking work charged to no process plus anyone else
 * on the machine; a lot of it means the numbers of that run are suspect.
 */
export function machineBusyTicks(): number {
  const [, user, nice, system, , , irq, softirq, steal] = readFileSync("/proc/stat", "utf8")
    .split("\n", 1)[0]
    .trim()
    .split(/\s+/)
    .map(Number);
  return user + nice + system + irq + softirq + steal;
}

/** Peak resident set size (VmHWM) of `pid`, in bytes. */
export function peakRssBytes(pid: number): number {
  const match = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!match) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
}

/** A loopback port nobody listens on right now (the kernel picks it; we release it for the server). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * Watches a file's size (SQLite's WAL beside a2a-node's database) until stopped; returns the largest size
 * seen, in bytes (0 if it never existed). The WAL only grows between checkpoint resets, so sampling every
 * few milliseconds catches its peak to within a few commits.
 */
export function watchFileSize(path: string, everyMs = 10): { stop(): number } {
  let peak = 0;
  const sample = () => {
    const size = statSync(path, { throwIfNoEntry: false })?.size ?? 0;
    if (size > peak) peak = size;
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}
