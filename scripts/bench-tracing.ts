/**
 * What a span costs, with tracing off (the no-op tracer) and on (sampled, into the batching OTLP exporter,
 * whose sends go to a stub that answers at once: the collector's side is not ours to time). Every run does the
 * same span site: start a server span with a remote parent, set four attributes, end it; "on" includes the
 * export's encoding (spans are flushed every 512, inside the timed loop), so it is the whole CPU a span costs.
 * The baseline is the site's own work without a tracer (the attribute object), which the others include.
 *   bun scripts/bench-tracing.ts [SPANS]
 */
import { ATTR } from "../src/tracing/attributes";
import { OtlpHttpExporter } from "../src/tracing/otlp-exporter";
import { ParentBasedRatioSampler } from "../src/tracing/sampler";
import { SpanKind } from "../src/tracing/span";
import { parseTraceparent } from "../src/tracing/trace-context";
import { NoopTracer, RecordingTracer, type Tracer } from "../src/tracing/tracer";

const N = Number(process.argv[2] ?? 200_000);
const remote = parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")!;

function site(tracer: Tracer, i: number): void {
  const span = tracer.startSpan("a2a SendMessage", { kind: SpanKind.Server, parent: remote });
  span.setAttributes({
    [ATTR.rpcSystem]: "jsonrpc",
    [ATTR.rpcMethod]: "SendMessage",
    [ATTR.a2aTaskId]: `task-${i}`,
    [ATTR.a2aPeer]: "beta",
  });
  span.end();
}

let sink: unknown;
function baseline(_: Tracer, i: number): void {
  sink = {
    [ATTR.rpcSystem]: "jsonrpc",
    [ATTR.rpcMethod]: "SendMessage",
    [ATTR.a2aTaskId]: `task-${i}`,
    [ATTR.a2aPeer]: "beta",
  };
}

async function time(label: string, tracer: Tracer, after?: () => Promise<void>, body = site): Promise<number> {
  const run = async (n: number) => {
    for (let i = 0; i < n; i++) {
      body(tracer, i);
      if (after && i % 512 === 511) await after();
    }
    await after?.();
  };
  await run(10_000); // warm-up
  const t0 = performance.now();
  await run(N);
  const ns = ((performance.now() - t0) * 1e6) / N;
  console.log(`${label.padEnd(34)} ${ns.toFixed(0).padStart(6)} ns per span site (${N} spans)`);
  return ns;
}

const stub: typeof fetch = Object.assign(
  async () => new Response("{}", { headers: { "content-type": "application/json" } }),
  { preconnect: () => {} },
);
const exporter = new OtlpHttpExporter({
  endpoint: "http://127.0.0.1:4318",
  resource: { "service.name": "bench" },
  fetch: stub,
});
await time("baseline (no tracer)", new NoopTracer(), undefined, baseline);
await time("off (no-op tracer)", new NoopTracer());
await time("on, ratio 1 (recorded, exported)", new RecordingTracer(new ParentBasedRatioSampler(1), exporter), () =>
  exporter.flush(),
);
const unsampled = parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")!;
Object.assign(remote, unsampled);
await time("on, caller did not sample", new RecordingTracer(new ParentBasedRatioSampler(1), exporter));
console.log("exporter:", JSON.stringify(exporter.stats()), sink ? "" : "(baseline did not run)");
