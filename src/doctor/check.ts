/** One finding of `a2a-node doctor`: what was checked, how it went, and what to do about it. */
export interface Finding {
  /** Short name of what was checked: "home", "certificate", "peer beta", ... */
  check: string;
  status: "ok" | "warn" | "fail" | "skip";
  detail: string;
  /** The next step, for warn and fail. */
  fix?: string;
}

export const ok = (check: string, detail: string): Finding => ({ check, status: "ok", detail });
export const warn = (check: string, detail: string, fix: string): Finding => ({ check, status: "warn", detail, fix });
export const fail = (check: string, detail: string, fix: string): Finding => ({ check, status: "fail", detail, fix });
export const skip = (check: string, detail: string): Finding => ({ check, status: "skip", detail });

/** "0644" */
export const octal = (mode: number) => (mode & 0o777).toString(8).padStart(4, "0");
