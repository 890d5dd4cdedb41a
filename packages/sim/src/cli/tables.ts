// The human-readable tables of meridian-sim (the --json output is the stable contract).

import type { ComparePolicyRow, GridJson } from "../fleet";
import { fmtFixed, fmtMs, fmtPercent, fmtSeconds, formatTable } from "./format";

export function policyTable(rows: readonly ComparePolicyRow[]): string {
  return formatTable(
    ["policy", "refused", "TTFT p50", "p95", "p99 (ms)", "E2E p50", "p95", "p99 (s)", "ITL p50", "rps", "cache hit", "pred acc", "vs oracle", "max share"],
    rows.map((r) => [
      r.name,
      String(r.failed),
      fmtMs(r.ttft_ms.p50),
      fmtMs(r.ttft_ms.p95),
      fmtMs(r.ttft_ms.p99),
      fmtSeconds(r.e2e_ms.p50),
      fmtSeconds(r.e2e_ms.p95),
      fmtSeconds(r.e2e_ms.p99),
      fmtFixed(r.itl_ms_p50, 1),
      fmtFixed(r.throughput_rps, 2),
      fmtPercent(r.cache_hit_rate),
      fmtPercent(r.prediction_accuracy),
      r.oracle?.ttft_p95_gap == null ? "—" : `${r.oracle.ttft_p95_gap >= 0 ? "+" : ""}${fmtPercent(r.oracle.ttft_p95_gap)}`,
      fmtPercent(r.max_share),
    ]),
  );
}

/** p95 TTFT per point: W_rtt down the rows, W_queue across; the optimum is starred. */
export function gridTable(json: GridJson): string {
  const rtts = [...new Set(json.points.map((p) => p.rtt))];
  const queues = [...new Set(json.points.map((p) => p.queue))];
  const at = new Map(json.points.map((p) => [`${p.rtt}/${p.queue}`, p]));
  const cell = (rtt: number, queue: number) => {
    const p = at.get(`${rtt}/${queue}`);
    const star = p && p.rtt === json.optimum.rtt && p.queue === json.optimum.queue ? "*" : "";
    return `${fmtMs(p?.ttft_ms.p95)}${star}`;
  };
  const p95 = formatTable(
    ["W_rtt \\ W_queue", ...queues.map((q) => q.toPrecision(3))],
    rtts.map((rtt) => [rtt.toPrecision(3), ...queues.map((q) => cell(rtt, q))]),
  );
  const o = json.optimum;
  const d = json.defaults;
  const detail = formatTable(
    ["point", "W_rtt", "W_queue", "TTFT p50", "p95 (ms)", "E2E p95 (s)", "max share"],
    [
      ["optimum", o.rtt.toPrecision(4), o.queue.toPrecision(4), fmtMs(o.ttft_ms.p50), fmtMs(o.ttft_ms.p95), fmtSeconds(o.e2e_p95_ms), fmtPercent(o.max_share)],
      ["defaults", d.rtt.toPrecision(4), d.queue.toPrecision(4), fmtMs(d.ttft_ms.p50), fmtMs(d.ttft_ms.p95), fmtSeconds(d.e2e_p95_ms), fmtPercent(d.max_share)],
    ],
  );
  return `p95 TTFT (ms) per point, * = optimum\n${p95}\n\n${detail}\n\ndefaults: ${fmtFixed(d.p95_ratio_to_optimum, 3)}× the optimum's p95 TTFT, ${fmtFixed(d.log_distance_to_optimum, 2)} from it in (ln W_rtt, ln W_queue)`;
}
