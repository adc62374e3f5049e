import { join } from "node:path";
import { spanCallTracing, type CallTracing } from "../client/call-tracing";
import { loadConfigFile, resolveSettings } from "../config";
import { newSpanId, newTraceId } from "../tracing/ids";
import { OtlpHttpExporter } from "../tracing/otlp-exporter";
import { ParentBasedRatioSampler } from "../tracing/sampler";
import { NonRecordingSpan, SpanKind, type Span } from "../tracing/span";
import { NoopTracer, RecordingTracer, type Tracer } from "../tracing/tracer";
import { VERSION } from "../version";
import type { CommandContext } from "./command";

/**
 * The trace a client command starts (`send`, `status`, `cancel`, `tasks list`): one per command, so every call
 * it makes to peers (and what the peers do for it) is one trace. The command's span is the root; each call to
 * a peer is a client span under it, and the request carries that span's `traceparent`.
 *
 * The trace is started whether or not this home exports spans: a node that records traces then continues
 * this one, and `send --verbose` prints its id to look it up there. Its sampled flag is this home's
 * trace_sampling_ratio (1 unless set), judged as every node judges a new trace.
 */
export interface CommandTrace {
  readonly traceId: string;
  /** This home sends its spans to a collector (otlp_endpoint is set). */
  readonly exporting: boolean;
  /** The calls to one peer: client spans under the command's span, naming the peer. */
  calls(peer?: { name?: string; url?: string }): CallTracing;
  /**
   * Ends the command's span (failed, with the error's name, when `error` is given) and sends what was
   * recorded: at most `FLUSH_MS`, so a collector that is slow or away never holds the command's exit. A
   * command that made no call to a peer exports nothing.
   */
  end(error?: unknown): Promise<void>;
}

/** What a client reads of the tracing settings (the same ones `serve` reads: otlp_endpoint and the others). */
export interface ClientTracingSettings {
  endpoint?: string;
  /** The otlp_headers_file's headers, already read. */
  headers?: Record<string, string>;
  samplingRatio: number;
}

/** A command exits this long after its last call at most, however the collector answers. */
export const FLUSH_MS = 2000;

export function startCommandTrace(
  command: string,
  settings: ClientTracingSettings,
  onError?: (message: string) => void,
): CommandTrace {
  let tracer: Tracer;
  let exporter: OtlpHttpExporter | undefined;
  let root: Span;
  if (settings.endpoint) {
    // One try, short: the command is about to exit, and nobody waits for its spans but the collector.
    exporter = new OtlpHttpExporter({
      endpoint: settings.endpoint,
      headers: settings.headers,
      resource: { "service.name": "a2a-node", "service.version": VERSION, "process.command": `a2a-node ${command}` },
      scopeVersion: VERSION,
      exportTimeoutMs: FLUSH_MS,
      maxAttempts: 1,
      onError,
    });
    tracer = new RecordingTracer(new ParentBasedRatioSampler(settings.samplingRatio), exporter);
    root = tracer.startSpan(`a2a-node ${command}`, { kind: SpanKind.Internal });
  } else {
    // Nothing to record: the ids and the sampling decision only, carried on to the peers.
    tracer = new NoopTracer();
    const traceId = newTraceId();
    const sampled = new ParentBasedRatioSampler(settings.samplingRatio).shouldSample(traceId, undefined);
    root = new NonRecordingSpan({ traceId, spanId: newSpanId(), sampled, remote: false });
  }
  // A command that never reached a peer (a usage error, an unknown peer) has nothing to show in a trace.
  let called = false;
  return {
    traceId: root.context.traceId,
    exporting: exporter !== undefined,
    calls: (peer) => {
      called = true;
      return spanCallTracing(tracer, root, peer);
    },
    async end(error) {
      if (!called) return;
      if (error !== undefined) root.fail(errorName(error));
      root.end();
      if (!exporter) return;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        exporter.shutdown(),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, FLUSH_MS + 500))),
      ]);
      clearTimeout(timer);
    },
  };
}

/**
 * The tracing settings of `home`'s config file and the environment (A2A_NODE_OTLP_ENDPOINT, ...). A config
 * that cannot be read gives tracing off here: the command's own reading of it reports the problem.
 */
export function clientTracingSettings(home: string, env: Record<string, string | undefined>): ClientTracingSettings {
  try {
    const config = resolveSettings({}, env, loadConfigFile(join(home, "config.toml"), false)).config as Partial<{
      otlpEndpoint: string;
      otlpHeaders: Record<string, string>;
      traceSamplingRatio: number;
    }>;
    return {
      endpoint: config.otlpEndpoint,
      headers: config.otlpHeaders,
      samplingRatio: config.traceSamplingRatio ?? 1,
    };
  } catch {
    return { samplingRatio: 1 };
  }
}

/**
 * Runs a client command in its trace: started before anything reaches a peer, ended (and flushed, bounded)
 * however the command ends. A failure that is the command's verdict on a task (an exit code) is no error of
 * the trace; one that throws marks the command's span failed with the error's name.
 */
export async function tracedCommand(
  command: string,
  ctx: CommandContext,
  run: (trace: CommandTrace) => Promise<number>,
  settings: ClientTracingSettings = clientTracingSettings(ctx.home, ctx.io.env),
): Promise<number> {
  const trace = startCommandTrace(command, settings);
  let failure: unknown;
  try {
    return await run(trace);
  } catch (err) {
    failure = err;
    throw err;
  } finally {
    await trace.end(failure);
  }
}

function errorName(error: unknown): string {
  const name = (error as { name?: unknown })?.name;
  return typeof name === "string" && name !== "" ? name : "Error";
}
