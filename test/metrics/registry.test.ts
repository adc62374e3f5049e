import { describe, expect, it } from "vitest";
import { escapeLabel, EXPOSITION_CONTENT_TYPE, Registry } from "../../src/metrics/registry";

describe("the Prometheus text format", () => {
  it("writes counters with HELP and TYPE, one sample per label value", () => {
    const r = new Registry();
    const c = r.counter("jobs_total", "Jobs done.", "kind");
    c.get("a").inc();
    c.get("a").inc(2);
    c.get("b").inc();
    expect(r.render()).toBe(
      '# HELP jobs_total Jobs done.\n# TYPE jobs_total counter\njobs_total{kind="a"} 3\njobs_total{kind="b"} 1\n',
    );
  });

  it("writes histograms with cumulative buckets, +Inf, _sum and _count", () => {
    const r = new Registry();
    const h = r.histogram("latency_seconds", "Latency.", "method", [0.1, 1, 0.01]);
    for (const v of [0.005, 0.05, 0.05, 0.5, 5]) h.get("Get").observe(v);
    h.get("Get").observe(0.1); // on a bound: counted in that bucket (le is "less or equal")
    expect(r.render().split("\n")).toEqual([
      "# HELP latency_seconds Latency.",
      "# TYPE latency_seconds histogram",
      'latency_seconds_bucket{method="Get",le="0.01"} 1',
      'latency_seconds_bucket{method="Get",le="0.1"} 4',
      'latency_seconds_bucket{method="Get",le="1"} 5',
      'latency_seconds_bucket{method="Get",le="+Inf"} 6',
      `latency_seconds_sum{method="Get"} ${0.005 + 0.05 + 0.05 + 0.5 + 5 + 0.1}`,
      'latency_seconds_count{method="Get"} 6',
      "",
    ]);
  });

  it("a metric without a label has bare samples; preset label values show at 0 before anything happened", () => {
    const r = new Registry();
    r.counter("restarts_total", "Restarts.").get().inc();
    r.counter("refused_total", "Refused.", "reason").preset(["a", "b"]);
    expect(r.render()).toContain("\nrestarts_total 1\n");
    expect(r.render()).toContain('refused_total{reason="a"} 0\nrefused_total{reason="b"} 0\n');
  });

  it("gauges are read at scrape time; one that cannot be read is left out of that scrape", () => {
    const r = new Registry();
    let n = 1;
    r.collected("open", "Open now.", () => n);
    r.collected("by_state", "By state.", () => [[{ state: "done" }, 2]]);
    r.collected("broken", "Throws.", () => {
      throw new Error("database closed");
    });
    r.collected("absent", "Nothing to say.", () => undefined);
    n = 7;
    const text = r.render();
    expect(text).toContain("# TYPE open gauge\nopen 7\n");
    expect(text).toContain('by_state{state="done"} 2\n');
    expect(text).not.toContain("broken");
    expect(text).not.toContain("absent");
  });

  it("escapes label values (backslash, quote, newline) and numbers as Prometheus spells them", () => {
    expect(escapeLabel('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
    const r = new Registry();
    r.counter("x_total", "X.", "peer").get('we"ird\n').inc();
    r.collected("inf", "Inf.", () => Infinity);
    expect(r.render()).toContain('x_total{peer="we\\"ird\\n"} 1');
    expect(r.render()).toContain("inf +Inf");
    expect(EXPOSITION_CONTENT_TYPE).toBe("text/plain; version=0.0.4; charset=utf-8");
  });

  it("refuses a metric name registered twice", () => {
    const r = new Registry();
    r.counter("a_total", "A.");
    expect(() => r.collected("a_total", "again", () => 1)).toThrow(/registered twice/);
  });
});
