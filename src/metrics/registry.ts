/**
 * Prometheus metrics, written by hand in the text exposition format 0.0.4: counters, gauges and histograms
 * with at most one label on the hot path. No dependency: what the node needs is a few dozen lines, and a
 * metrics library would cost more per observation than the node's own work on a request.
 *
 * The hot path only adds to numbers in place. A labelled child is made once, the first time its label value
 * is seen, and found again by one Map lookup; label values on hot paths come from closed sets (JSON-RPC method
 * names the node serves, task states, refusal kinds), so a client cannot make the series grow without bound.
 *
 * @example
 *   const registry = new Registry();
 *   const requests = registry.histogram("a2a_node_rpc_request_duration_seconds", "JSON-RPC requests", "method", [0.01,
 *   0.1, 1]); requests.get("GetTask").observe(0.004);
 *   registry.render(); // "# HELP a2a_node_rpc_request_duration_seconds JSON-RPC requests\n# TYPE ..."
 */

/** The exposition format's content type (Prometheus 0.0.4). */
export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

type Labels = Record<string, string>;

interface Metric {
  readonly name: string;
  render(out: string[]): void;
}

export class Counter {
  value = 0;
  inc(by = 1): void {
    this.value += by;
  }
}

export class Histogram {
  /** Observations per bucket (not cumulative; the last one is +Inf). */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && value > b[i]) i++;
    this.counts[i]++;
    this.sum += value;
    this.count++;
  }
}

/** Children of one metric by the value of its one label ("" for a metric without labels). */
class Family<T> implements Metric {
  private readonly children = new Map<string, T>();

  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly type: "counter" | "histogram",
    private readonly label: string | undefined,
    private readonly make: () => T,
    private readonly write: (out: string[], name: string, labels: string, child: T) => void,
  ) {}

  /** The child for this label value, made on first use. */
  get(value = ""): T {
    let child = this.children.get(value);
    if (child === undefined) {
      child = this.make();
      this.children.set(value, child);
    }
    return child;
  }

  /** Makes the children for these values now, so a scrape shows them at 0 before anything happened. */
  preset(values: readonly string[]): this {
    for (const v of values) this.get(v);
    return this;
  }

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${escapeHelp(this.help)}\n# TYPE ${this.name} ${this.type}\n`);
    for (const [value, child] of this.children)
      this.write(out, this.name, this.label === undefined ? "" : `${this.label}="${escapeLabel(value)}"`, child);
  }
}

/** A gauge read when scraped: the callback returns one value, or one value per label set. */
class CollectedGauge implements Metric {
  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly collect: () => number | undefined | [Labels, number][],
    private readonly type: "gauge" | "counter" = "gauge",
  ) {}

  render(out: string[]): void {
    let samples: number | undefined | [Labels, number][];
    try {
      samples = this.collect();
    } catch {
      return; // a reading that fails (a closed database at shutdown) leaves the metric out of this scrape
    }
    if (samples === undefined) return;
    out.push(`# HELP ${this.name} ${escapeHelp(this.help)}\n# TYPE ${this.name} ${this.type}\n`);
    if (typeof samples === "number") {
      out.push(`${this.name} ${formatNumber(samples)}\n`);
      return;
    }
    for (const [labels, value] of samples) out.push(`${this.name}${labelText(labels)} ${formatNumber(value)}\n`);
  }
}

export class Registry {
  private readonly metrics: Metric[] = [];

  counter(name: string, help: string, label?: string): Family<Counter> {
    return this.add(
      new Family(
        name,
        help,
        "counter",
        label,
        () => new Counter(),
        (out, n, labels, c) => out.push(`${n}${labels ? `{${labels}}` : ""} ${formatNumber(c.value)}\n`),
      ),
    );
  }

  histogram(name: string, help: string, label: string | undefined, buckets: readonly number[]): Family<Histogram> {
    const sorted = [...buckets].sort((a, b) => a - b);
    return this.add(new Family(name, help, "histogram", label, () => new Histogram(sorted), writeHistogram));
  }

  /** A gauge (or a counter kept elsewhere) whose value is read at scrape time. */
  collected(
    name: string,
    help: string,
    collect: () => number | undefined | [Labels, number][],
    type: "gauge" | "counter" = "gauge",
  ): void {
    this.add(new CollectedGauge(name, help, collect, type));
  }

  /** Every metric in the exposition format. */
  render(): string {
    const out: string[] = [];
    for (const m of this.metrics) m.render(out);
    return out.join("");
  }

  private add<M extends Metric>(metric: M): M {
    if (this.metrics.some((m) => m.name === metric.name)) throw new Error(`metric ${metric.name} is registered twice`);
    this.metrics.push(metric);
    return metric;
  }
}

function writeHistogram(out: string[], name: string, labels: string, h: Histogram): void {
  const sep = labels ? `${labels},` : "";
  let cumulative = 0;
  for (let i = 0; i < h.bounds.length; i++) {
    cumulative += h.counts[i];
    out.push(`${name}_bucket{${sep}le="${formatNumber(h.bounds[i])}"} ${cumulative}\n`);
  }
  out.push(`${name}_bucket{${sep}le="+Inf"} ${h.count}\n`);
  const braces = labels ? `{${labels}}` : "";
  out.push(`${name}_sum${braces} ${formatNumber(h.sum)}\n${name}_count${braces} ${h.count}\n`);
}

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}

/** Label values escape backslash, double quote and line feed (exposition format 0.0.4). */
export function escapeLabel(v: string): string {
  return v.replace(/[\\"\n]/g, (c) => (c === "\n" ? "\\n" : `\\${c}`));
}

function escapeHelp(v: string): string {
  return v.replace(/[\\\n]/g, (c) => (c === "\n" ? "\\n" : "\\\\"));
}

export function formatNumber(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (n === Infinity) return "+Inf";
  if (n === -Infinity) return "-Inf";
  return String(n);
}
