import { closeSync, openSync } from "node:fs";

/**
 * Whether `n` more file descriptors can be opened now. Bun ends the whole process ("bun ran out of file
 * descriptors (ProcessFdQuotaExceeded)", no exception to catch) when a Worker is started while the process has
 * none left for the worker's thread, so every worker is started only once this says there is room; a node out
 * of descriptors then answers and recovers instead of dying. Costs 2n system calls, once per worker.
 */
export function descriptorHeadroom(n = 32): boolean {
  const opened: number[] = [];
  try {
    for (let i = 0; i < n; i++) opened.push(openSync("/dev/null", "r"));
    return true;
  } catch {
    return false;
  } finally {
    for (const fd of opened) closeSync(fd);
  }
}
