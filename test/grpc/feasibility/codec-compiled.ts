/**
 * Feasibility for issue 23 (c), our own core: the codec (@bufbuild/protobuf/wire underneath), framing and
 * status trailers inside a `bun build --compile` binary. Run compiled:
 *   bun build --compile test/grpc/feasibility/codec-compiled.ts --outfile /tmp/codec && /tmp/codec
 */
import { a2aCodec } from "../../../src/grpc/a2a-service";
import { MessageReader, frame } from "../../../src/grpc/framing";
import { errorTrailers, readStatus } from "../../../src/grpc/status";
import { Verdicts } from "./certs";
import { task } from "../fixtures";

const v = new Verdicts();
const codec = a2aCodec();

await v.check("Task -> protobuf -> framed -> read -> Task", async () => {
  const bytes = codec.encode("lf.a2a.v1.Task", task);
  const [message] = new MessageReader().push(frame(bytes));
  const back = codec.decode("lf.a2a.v1.Task", message);
  // Key order follows field numbers on decode, so compare structurally.
  if (!Bun.deepEquals(back, task)) throw new Error(`differs: ${JSON.stringify(back).slice(0, 200)}`);
  return `${bytes.length} bytes`;
});

await v.check("google.rpc.Status with ErrorInfo in trailers", async () => {
  const s = readStatus(errorTrailers({ reason: "TASK_NOT_FOUND", message: "Task not found: t", metadata: { taskId: "t" } }));
  if (s.code !== 5 || s.errorInfo?.reason !== "TASK_NOT_FOUND") throw new Error(JSON.stringify(s));
  return `code ${s.code}, reason ${s.errorInfo.reason}, domain ${s.errorInfo.domain}`;
});

console.log(v.failed ? `${v.failed} piece(s) failed` : "all pieces work");
process.exit(v.failed ? 1 : 0);
