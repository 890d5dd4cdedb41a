// Prometheus text exposition, written by hand so the output matches what SGLang and vLLM (both on the
// Python prometheus_client) print: `le` first in bucket labels, floats as Python/Go print them
// ("1.0", "8.128902e+06", "+Inf"), and counters declared under their `_total` name.

export type Labels = Readonly<Record<string, string>>;

/** prometheus_client's floatToGoString: Python repr, switched to an exponent past 7 integer digits. */
export function formatValue(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  if (Number.isNaN(value)) return "NaN";
  let text = String(value);
  if (Number.isInteger(value) && !text.includes("e")) text += ".0";
  const dot = text.indexOf(".");
  if (value > 0 && dot > 6 && !text.includes("e")) {
    const mantissa = `${text[0]}.${text.slice(1, dot)}${text.slice(dot + 1)}`.replace(/[0.]+$/, "");
    return `${mantissa}e+0${dot - 1}`;
  }
  return text;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function formatLabels(labels: Labels): string {
  const parts = Object.entries(labels).map(([name, value]) => `${name}="${escapeLabel(value)}"`);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

/** Accumulates one exposition document. */
export class Exposition {
  private readonly lines: string[] = [];

  family(name: string, type: "gauge" | "counter" | "histogram", help?: string): this {
    if (help !== undefined) this.lines.push(`# HELP ${name} ${help}`);
    this.lines.push(`# TYPE ${name} ${type}`);
    return this;
  }

  sample(name: string, labels: Labels, value: number): this {
    this.lines.push(`${name}${formatLabels(labels)} ${formatValue(value)}`);
    return this;
  }

  histogram(name: string, labels: Labels, histogram: Histogram): this {
    this.sample(`${name}_sum`, labels, histogram.sum);
    let cumulative = 0;
    for (let i = 0; i < histogram.bounds.length; i++) {
      cumulative += histogram.counts[i]!;
      this.sample(`${name}_bucket`, { le: formatValue(histogram.bounds[i]!), ...labels }, cumulative);
    }
    cumulative += histogram.counts[histogram.bounds.length]!;
    this.sample(`${name}_bucket`, { le: "+Inf", ...labels }, cumulative);
    this.sample(`${name}_count`, labels, cumulative);
    return this;
  }

  toString(): string {
    return `${this.lines.join("\n")}\n`;
  }
}

/** A cumulative histogram with fixed upper bounds (the +Inf bucket is implicit). */
export class Histogram {
  readonly counts: number[];
  sum = 0;

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(value: number, times = 1): void {
    let i = 0;
    while (i < this.bounds.length && value > this.bounds[i]!) i++;
    this.counts[i]! += times;
    this.sum += value * times;
  }
}
