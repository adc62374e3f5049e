import { statfsSync } from "node:fs";
import { dirname } from "node:path";
import type { Logger } from "../log";
import type { CallerUsage, TaskStore } from "../tasks/task-store";
import { reasonOf } from "../reason";

/** Whom the node refuses new tasks and messages from, for want of disk space. */
export type FloorRefusing = "none" | "heaviest" | "all";

export interface DiskFloorState {
  /** Bytes free for the node on the database's file system (statfs: blocks available to unprivileged users). */
  freeBytes: number;
  /** min_free_disk. */
  floorBytes: number;
  /** Below the floor: the heaviest caller; below half of it: every caller. */
  refusing: FloorRefusing;
  /** The caller whose stored tasks take the most bytes, when refusing. */
  heaviest?: CallerUsage & { owner: string };
  /** Why free space could not be read, if it could not (then nothing is refused on its account). */
  error?: string;
}

export interface DiskFloorOptions {
  /** The database file: the floor watches the file system it is on. */
  path: string;
  /** min_free_disk, in bytes; 0 turns the floor off. */
  floorBytes: number;
  /** How often free space is read (a statfs call; the heaviest caller is read only below the floor). */
  everyMs?: number;
  log?: Logger;
  /** Free bytes on the file system at `dir` (statfs by default; tests give their own). */
  freeBytes?(dir: string): number;
}

/** Free space is read once a second: a flood writes at most a second's worth past the floor before it is seen. */
const EVERY_MS = 1000;

/**
 * The free-space floor (min_free_disk) of a node on SQLite: a backstop behind the per-caller quotas for when
 * the disk fills anyway (other callers, other programs, a quota set too high). Below the floor the node refuses
 * new tasks and messages from the caller whose stored tasks take the most bytes, so the one filling the disk
 * is stopped first and the others go on; below half the floor it refuses every caller, before SQLite's writes
 * start failing for everyone. /health/ready and the metrics read state(). A Postgres database's disk is the
 * server's, which this node cannot see: there the quotas alone apply.
 */
export class DiskFloor {
  private current: DiskFloorState;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly dir: string;
  private readonly free: (dir: string) => number;
  private ticking = false;

  constructor(
    private readonly store: Pick<TaskStore, "heaviest">,
    private readonly o: DiskFloorOptions,
  ) {
    this.dir = dirname(o.path);
    this.free = o.freeBytes ?? freeBytesAt;
    this.current = { freeBytes: Number.NaN, floorBytes: o.floorBytes, refusing: "none" };
  }

  /** Reads free space now, then every `everyMs`. */
  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => void this.check(), this.o.everyMs ?? EVERY_MS);
    this.timer.unref?.();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  state(): DiskFloorState {
    return this.current;
  }

  /** Whether new tasks and messages of `owner` are refused for want of space. */
  refuses(owner: string): boolean {
    const s = this.current;
    return s.refusing === "all" || (s.refusing === "heaviest" && s.heaviest?.owner === owner);
  }

  /** Reads free space (and, below the floor, who holds the most) and logs a change of what is refused. */
  async check(): Promise<DiskFloorState> {
    if (this.ticking || this.o.floorBytes <= 0) return this.current;
    this.ticking = true;
    try {
      const before = this.current;
      let next: DiskFloorState;
      try {
        const freeBytes = this.free(this.dir);
        const floorBytes = this.o.floorBytes;
        const refusing: FloorRefusing =
          freeBytes < floorBytes / 2 ? "all" : freeBytes < floorBytes ? "heaviest" : "none";
        next = { freeBytes, floorBytes, refusing };
        if (refusing !== "none") next.heaviest = (await this.store.heaviest(1))[0];
      } catch (err) {
        next = {
          freeBytes: Number.NaN,
          floorBytes: this.o.floorBytes,
          refusing: "none",
          error: reasonOf(err),
        };
      }
      this.current = next;
      if (next.refusing !== before.refusing || next.heaviest?.owner !== before.heaviest?.owner) this.report(next);
      return next;
    } finally {
      this.ticking = false;
    }
  }

  private report(s: DiskFloorState): void {
    const fields = { free_bytes: s.freeBytes, min_free_disk: s.floorBytes };
    if (s.refusing === "none")
      this.o.log?.info("free disk space is above min_free_disk again: every caller's tasks are taken", fields);
    else if (s.refusing === "heaviest")
      this.o.log?.warn(
        "free disk space is below min_free_disk: new tasks and messages of the caller holding the most are refused",
        {
          ...fields,
          peer: s.heaviest?.owner,
          peer_bytes: s.heaviest?.bytes,
        },
      );
    else
      this.o.log?.error(
        "free disk space is below half of min_free_disk: new tasks and messages of every caller are refused",
        fields,
      );
  }
}

function freeBytesAt(dir: string): number {
  const s = statfsSync(dir);
  return Number(s.bavail) * Number(s.bsize);
}
