import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Exposition, Histogram, formatValue } from "./prometheus";

describe("prometheus text", () => {
  it("formats values as prometheus_client does", () => {
    assert.equal(formatValue(0), "0.0");
    assert.equal(formatValue(162), "162.0");
    assert.equal(formatValue(0.28), "0.28");
    assert.equal(formatValue(-1), "-1.0");
    assert.equal(formatValue(8128902), "8.128902e+06");
    assert.equal(formatValue(7400757), "7.400757e+06");
    assert.equal(formatValue(123859), "123859.0");
    assert.equal(formatValue(866964.5791549598), "866964.5791549598");
    assert.equal(formatValue(10_000_000), "1e+07");
    assert.equal(formatValue(Number.POSITIVE_INFINITY), "+Inf");
  });

  it("writes cumulative histograms with le first and +Inf, _sum and _count", () => {
    const histogram = new Histogram([0.1, 1]);
    histogram.observe(0.05);
    histogram.observe(0.5, 2);
    histogram.observe(5);
    const text = new Exposition()
      .family("x:latency_seconds", "histogram", "Latency.")
      .histogram("x:latency_seconds", { model_name: "m" }, histogram)
      .toString();
    assert.equal(
      text,
      [
        "# HELP x:latency_seconds Latency.",
        "# TYPE x:latency_seconds histogram",
        'x:latency_seconds_sum{model_name="m"} 6.05',
        'x:latency_seconds_bucket{le="0.1",model_name="m"} 1.0',
        'x:latency_seconds_bucket{le="1.0",model_name="m"} 3.0',
        'x:latency_seconds_bucket{le="+Inf",model_name="m"} 4.0',
        'x:latency_seconds_count{model_name="m"} 4.0',
        "",
      ].join("\n"),
    );
  });

  it("escapes label values", () => {
    const text = new Exposition().sample("x", { a: 'q"\\\n' }, 1).toString();
    assert.equal(text, 'x{a="q\\"\\\\\\n"} 1.0\n');
  });
});
