"use client";
// A grid experiment's result: the landscape heatmap with a tuner's incumbent and trajectory on it
// (the operator picks which: the fleet's, the default in fleet scope, or an LB's), and the optimum
// against the defaults.
import { useQuery } from "@tanstack/react-query";
import type { GridResult } from "../lib/experiment-result";
import { fmtMs, fmtPct, fmtWeight } from "../lib/format";
import { useTRPC } from "../trpc/client";
import { LIVE_INTERVAL_MS } from "../trpc/query-client";
import { LandscapeHeatmap } from "./landscape";
import { FLEET_OPTION, useTuner, useTunerChoice } from "./tuner-choice";

export function LandscapeView({ result }: { result: GridResult }) {
  const trpc = useTRPC();
  const lbs = useQuery(trpc.lbs.list.queryOptions());
  const scope = useQuery({ ...trpc.tuner.scope.queryOptions(), refetchInterval: LIVE_INTERVAL_MS * 2 });
  // In fleet scope the fleet's tuner sets every LB's weights (an LB's own waits): it is the default.
  const { value, target, select, fleetScope } = useTunerChoice(lbs.data, scope.data?.scope);
  const tuner = useTuner(target, LIVE_INTERVAL_MS * 2);
  const { optimum, defaults } = result;
  return (
    <div data-testid="experiment-landscape">
      <div className="grid-2">
        <LandscapeHeatmap
          points={result.points}
          optimum={optimum}
          incumbent={tuner.data?.incumbent ?? null}
          trajectory={(tuner.data?.steps ?? []).map((s) => ({ step: s.step, weights: s.weights, accepted: s.accepted }))}
        />
        <div>
          <label className="inline-label">
            Tuner on the map
            <select value={value ?? ""} onChange={(e) => select(e.target.value)} data-testid="experiment-landscape-lb">
              {fleetScope ? <option value={FLEET_OPTION}>the fleet</option> : null}
              {(lbs.data ?? []).map((lb) => (
                <option key={lb.id} value={lb.id}>
                  {lb.name}
                </option>
              ))}
            </select>
          </label>
          <table className="table compact" data-testid="experiment-landscape-summary">
            <thead>
              <tr>
                <th />
                <th className="num">W_rtt</th>
                <th className="num">W_queue</th>
                <th className="num">TTFT p50</th>
                <th className="num">TTFT p95</th>
                <th className="num">E2E p95</th>
                <th className="num">Max share</th>
              </tr>
            </thead>
            <tbody>
              {[
                ["grid optimum", optimum],
                ["defaults", defaults],
              ].map(([label, p]) => {
                const point = p as GridResult["optimum"];
                return (
                  <tr key={label as string}>
                    <td>{label as string}</td>
                    <td className="num">{fmtWeight(point.rtt)}</td>
                    <td className="num">{fmtWeight(point.queue)}</td>
                    <td className="num">{fmtMs(point.ttft_ms.p50)}</td>
                    <td className="num">{fmtMs(point.ttft_ms.p95)}</td>
                    <td className="num">{fmtMs(point.e2e_p95_ms)}</td>
                    <td className="num">{fmtPct(point.max_share)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <p className="muted small">
            The defaults give {defaults.p95_ratio_to_optimum?.toFixed(2) ?? "–"}× the optimum's p95 TTFT on this workload,{" "}
            {defaults.log_distance_to_optimum === null ? "an unbounded distance" : defaults.log_distance_to_optimum.toFixed(2)} away in log-weight space. The
            landscape is simulated with the same weights on every LB; the live tuner tunes one LB (or, in fleet scope, every LB at once) on live traffic.
          </p>
        </div>
      </div>
    </div>
  );
}
