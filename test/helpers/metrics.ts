/** A scrape of /metrics, read as Prometheus would: each sample by its name and labels, as written. */
export interface Scrape {
  text: string;
  /**
   * The value of `name{labels}` (labels as written, e.g. 'a2a_node_tasks{state="TASK_STATE_COMPLETED"}'), or undefined.
   */
  value(series: string): number | undefined;
  /** The sum over every sample of a metric name, whatever its labels. */
  sum(name: string): number;
}

export function parseMetrics(text: string): Scrape {
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const cut = line.lastIndexOf(" ");
    const value = line.slice(cut + 1);
    samples.set(line.slice(0, cut), value === "+Inf" ? Infinity : Number(value));
  }
  return {
    text,
    value: (series) => samples.get(series),
    sum: (name) => [...samples].filter(([k]) => k === name || k.startsWith(`${name}{`)).reduce((a, [, v]) => a + v, 0),
  };
}

/** GETs /metrics from a plain-HTTP admin port. */
export async function scrape(adminUrl: string): Promise<Scrape> {
  const res = await fetch(`${adminUrl}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}: ${await res.text()}`);
  if (res.headers.get("content-type") !== "text/plain; version=0.0.4; charset=utf-8")
    throw new Error(`/metrics content type ${res.headers.get("content-type")}`);
  return parseMetrics(await res.text());
}
