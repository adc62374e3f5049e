import { requireBinary } from "./binary";

/** A run of the compiled binary on a real pseudo-terminal, as a person at a terminal would see it. */
export interface PtyRun {
  /** Everything the terminal showed so far (stdout and stderr together, with "\r\n" line ends). */
  output(): string;
  /** Resolves with the output once it matches `re` (an event of the process, not a timer). */
  waitFor(re: RegExp): Promise<string>;
  /** Types into the terminal ("\x03" is Ctrl-C, delivered as SIGINT by the terminal's line discipline). */
  type(text: string): void;
  exited: Promise<number>;
}

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * Runs `a2a-node ARGS` under util-linux `script`, which gives it a pseudo-terminal for stdin, stdout and
 * stderr (`script -qec CMD /dev/null`: quiet, exit with the command's code, no typescript file). The
 * terminal is 120 columns wide. `redirectStdout` sends stdout to a file instead: a pipe-like stdout while
 * stderr stays on the terminal.
 */
export function runInPty(args: string[], env: Record<string, string> = {}, redirectStdout?: string): PtyRun {
  const command = `stty cols 120 rows 40; exec ${[requireBinary(), ...args].map(quote).join(" ")}${redirectStdout ? ` > ${quote(redirectStdout)}` : ""}`;
  const proc = Bun.spawn(["script", "-qec", command, "/dev/null"], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", TERM: "xterm", ...env },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  const waiters: { re: RegExp; resolve(o: string): void; reject(e: Error): void }[] = [];
  const decoder = new TextDecoder();
  const pump = (async () => {
    for await (const chunk of proc.stdout as unknown as AsyncIterable<Uint8Array>) {
      out += decoder.decode(chunk, { stream: true });
      for (let i = waiters.length - 1; i >= 0; i--) if (waiters[i]!.re.test(out)) waiters.splice(i, 1)[0]!.resolve(out);
    }
    for (const w of waiters.splice(0))
      w.reject(new Error(`the command ended before showing ${w.re}:\n${JSON.stringify(out)}`));
  })();
  void new Response(proc.stderr).text();
  return {
    output: () => out,
    waitFor: (re) =>
      re.test(out) ? Promise.resolve(out) : new Promise((resolve, reject) => waiters.push({ re, resolve, reject })),
    type(text) {
      proc.stdin.write(text);
      proc.stdin.flush();
    },
    // stdin stays open until the end: `script` ends the session when its input ends. The code is given once
    // everything the terminal showed has been read.
    exited: Promise.all([proc.exited, pump]).then(([code]) => {
      proc.stdin.end();
      return code;
    }),
  };
}
