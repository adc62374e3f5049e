import type { Io } from "./io";

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const REDRAW_MS = 200;
/** Erase the current terminal line and return to its start. */
const CLEAR = "\r\x1b[2K";

/** 4 s, 1m05s, 2h03m: how long a task has been waited for. */
export function elapsedText(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

/**
 * One line on stderr that shows a person what a wait is doing: state, time waited, and the agent's last
 * status message, redrawn in place. It exists only when stderr is a terminal (never in a pipe, a log or
 * --json), so scripts see exactly the plain output.
 */
export class ProgressLine {
  private state = "submitted";
  private note = "";
  private drawn = false;
  private hidden = false;
  private frame = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly startedAt = Date.now();

  private constructor(
    private readonly io: Io,
    readonly enabled: boolean,
    private readonly label: string,
  ) {}

  /** A progress line for a wait on `label`; inert unless stderr is a terminal and `json` is off. */
  static start(io: Io, label: string, json: boolean): ProgressLine {
    const enabled = io.tty?.stderr === true && !json && io.env.TERM !== "dumb";
    const line = new ProgressLine(io, enabled, label);
    if (enabled) {
      line.timer = setInterval(() => line.draw(), REDRAW_MS);
      line.timer.unref?.();
      line.draw();
    }
    return line;
  }

  /** The task's state ("working") and its latest status text, if it has one. */
  update(state: string, note?: string): void {
    const n = note === undefined ? this.note : note.replace(/\s+/g, " ").trim();
    if (state === this.state && n === this.note) return;
    this.state = state;
    this.note = n;
    this.draw();
  }

  /** Takes the line off the screen (before other output on the same terminal) until show(). */
  hide(): void {
    this.clear();
    this.hidden = true;
  }

  show(): void {
    this.hidden = false;
    this.draw();
  }

  /** Writes a line of stderr above the progress line. */
  print(text: string): void {
    this.clear();
    this.io.stderr.write(text.endsWith("\n") ? text : `${text}\n`);
    this.draw();
  }

  /** Removes the line for good. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.clear();
    this.hidden = true;
  }

  private clear(): void {
    if (this.drawn) this.io.stderr.write(CLEAR);
    this.drawn = false;
  }

  private draw(): void {
    if (!this.enabled || this.hidden || !this.timer) return;
    const spinner = FRAMES[this.frame++ % FRAMES.length];
    const parts = [`${spinner} ${this.label}`, this.state, elapsedText(Date.now() - this.startedAt)];
    if (this.note) parts.push(this.note);
    const width = Math.max(20, (this.io.tty?.columns ?? 80) - 1);
    let text = parts.join(" · ");
    // One terminal line, always: a wrapped line could not be redrawn in place.
    if ([...text].length > width) text = `${[...text].slice(0, width - 1).join("")}…`;
    this.io.stderr.write(`${CLEAR}${text}`);
    this.drawn = true;
  }
}
