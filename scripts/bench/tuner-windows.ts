// What a window of N requests can tell about two weight sets, with no interference at all (bench:tuner's
// `windows`). Each set runs alone on every LB over the same requests and seed; the requests are cut
// into consecutive windows of N by arrival, and each window's p95 TTFT under one set is compared with
// the same requests' p95 under the other. A tuner that decides on N samples sees at best one such
// window: where the set that wins over the whole workload loses most windows, its lead lies in a few
// bad episodes that N samples seldom contain, and no trial of that length can find it.
//
// Library only: scripts/bench/tuner.ts calls it and prints the result.

import { percentile, simulateFleet, type FleetSpec, type SimRequest } from "@meridian/sim";
import type { Weights } from "@meridian/routing";
import { EVAL_SEEDS, everyLbOn, frozenFleet, round, sentAwayShare } from "./tuner-regimes";

/** Window lengths, in requests of the whole fleet: a trial's cap, the tuner's budget, twice it. */
export const WINDOW_REQUESTS: readonly number[] = [500, 1000, 2000];

/** The served requests under `weights` on every LB (refused requests are absent), and each one's TTFT by id. */
function servedAlone(spec: FleetSpec, requests: readonly SimRequest[], weights: Weights, seed: number) {
  const records = simulateFleet(frozenFleet(spec, everyLbOn(spec, weights)), requests, { policy: "gorgo", seed, recordRequests: true }).records ?? [];
  return { records, ttft: new Map(records.map((r) => [r.id, r.ttft_ms])) };
}

export function windowsAlone(
  spec: FleetSpec,
  requests: readonly SimRequest[],
  pair: { incumbent: Weights; candidate: Weights },
  sizes: readonly number[] = WINDOW_REQUESTS,
  seeds: readonly number[] = EVAL_SEEDS,
) {
  const served = seeds.map((seed) => ({
    incumbent: servedAlone(spec, requests, pair.incumbent, seed),
    candidate: servedAlone(spec, requests, pair.candidate, seed),
  }));
  const runs = served.map((run) => ({ incumbent: run.incumbent.ttft, candidate: run.candidate.ttft }));
  const pooled = (arm: "incumbent" | "candidate") =>
    round(
      percentile(
        runs.flatMap((run) => [...run[arm].values()]),
        95,
      ),
      1,
    );
  const whole = { incumbent: pooled("incumbent"), candidate: pooled("candidate") };
  const sentAway = (arm: "incumbent" | "candidate") => sentAwayShare(served.flatMap((run) => run[arm].records));
  const candidateWinsWhole = whole.candidate < whole.incumbent;
  return {
    pair,
    seeds,
    whole_workload_p95_ms: whole,
    whole_workload_sent_away: { incumbent: sentAway("incumbent"), candidate: sentAway("candidate") },
    windows: sizes.map((size) => {
      // No window of this length fits: its ratios would be taken over no windows (NaN, printed null).
      if (size > requests.length) return { window_requests: size, windows: 0, note: `the workload (${requests.length} requests) is shorter than the window` };
      let agree = 0;
      let disagree = 0;
      const ratios: number[] = [];
      for (const run of runs) {
        for (let from = 0; from + size <= requests.length; from += size) {
          const ids = requests.slice(from, from + size).map((r) => r.id);
          const p95 = (ttft: Map<number, number>) =>
            percentile(
              ids.flatMap((id) => (ttft.has(id) ? [ttft.get(id)!] : [])),
              95,
            );
          const incumbent = p95(run.incumbent);
          const candidate = p95(run.candidate);
          ratios.push(candidate / incumbent);
          if (candidate < incumbent === candidateWinsWhole) agree++;
          else disagree++;
        }
      }
      ratios.sort((x, y) => x - y);
      const at = (q: number) => round(ratios[Math.floor(q * (ratios.length - 1))]!, 2);
      return {
        window_requests: size,
        windows: agree + disagree,
        agree_with_whole_workload: agree,
        ratio_candidate_to_incumbent: { p25: at(0.25), median: at(0.5), p75: at(0.75), max: at(1) },
      };
    }),
  };
}
