/**
 * An a2a-node (the real daemon, in-process) whose executor streams artifact chunks as fast as it is asked, so
 * the stream benchmark measures the node's event path (numbering, group commit to SQLite, publish, SSE) rather
 * than a model. The message text says what to do:
 *   "burst N"          emit N chunks as fast as possible (yielding to I/O every 256)
 *   "paced N MS"       emit N chunks, one every MS milliseconds
 * Every chunk's text is the wall-clock time it was emitted (ms, microsecond precision), for latency.
 *   bun scripts/bench/stream-server.ts HOME PORT
 */
import "reflect-metadata";
import { DEFAULTS } from "../../src/config";
import type { AgentExecutor, ExecutionOutcome, ExecutionRequest } from "../../src/executors/executor";
import { messageText } from "../../src/executors/executor";
import { createLogger } from "../../src/log";
import { startNode } from "../../src/node";

const wallMs = () => performance.timeOrigin + performance.now();
const turn = () => new Promise<void>((r) => setImmediate(r));

class StreamingBenchExecutor implements AgentExecutor {
  readonly kind = "bench-stream";

  async execute(req: ExecutionRequest): Promise<ExecutionOutcome> {
    const [mode, n, ms] = messageText(req.message).split(" ");
    const count = Number(n);
    const artifactId = `${req.taskId}-stream`;
    for (let i = 0; i < count && !req.signal.aborted; i++) {
      req.events.artifact(
        { artifactId, parts: [{ text: `${wallMs().toFixed(3)} ` }] },
        { append: i > 0, lastChunk: i === count - 1 },
      );
      if (mode === "paced") await Bun.sleep(Number(ms));
      else if (i % 256 === 255) await turn();
    }
    return { state: "TASK_STATE_COMPLETED" };
  }
}

const [home, port] = process.argv.slice(2);
const node = await startNode(
  home,
  { ...DEFAULTS, host: "127.0.0.1", port: Number(port), maxConcurrent: 8 },
  createLogger((l) => process.stderr.write(l), "warn"),
  { executor: new StreamingBenchExecutor() },
);
process.stdout.write(`listening ${node.url}\n`);
process.on("SIGTERM", () => void node.stop().then(() => process.exit(0)));
