import { readdirSync, readFileSync } from "node:fs";
import type { Registry } from "./registry";

/**
 * The process_* metrics every Prometheus client library exports (same names and units), read from the
 * process and /proc at scrape time: memory, CPU, file descriptors, start time. Nothing is kept between scrapes.
 */
export function registerProcessMetrics(registry: Registry, startedAtMs: number): void {
  registry.collected("process_resident_memory_bytes", "Resident memory size in bytes.", () =>
    process.memoryUsage.rss(),
  );
  registry.collected("process_heap_bytes", "JavaScript heap in use, in bytes.", () => process.memoryUsage().heapUsed);
  registry.collected(
    "process_cpu_seconds_total",
    "Total user and system CPU time spent in seconds.",
    () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1e6;
    },
    "counter",
  );
  registry.collected("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", () =>
    Math.floor(startedAtMs / 1000),
  );
  registry.collected("process_open_fds", "Number of open file descriptors.", openFds);
  registry.collected("process_max_fds", "Maximum number of open file descriptors.", maxFds);
}

/** Entries of /proc/self/fd, less the one the listing itself holds open; undefined off Linux. */
function openFds(): number | undefined {
  try {
    return readdirSync("/proc/self/fd").length - 1;
  } catch {
    return undefined;
  }
}

function maxFds(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}
