// meridian-sim tune: the online tuner on one workload, with its trajectory.

import { tune } from "../../fleet";
import type { FlagReader } from "../args";
import { describeRun, experimentBase, loadWorkload, readCommon, readTuner, readWeights, resolveTimeScale, writeJson } from "../common";
import { fmtFixed, fmtMs, fmtPercent, fmtSeconds, formatTable } from "../format";

export async function runTune(flags: FlagReader): Promise<void> {
  const common = readCommon(flags);
  const weights = readWeights(flags);
  const tuner = readTuner(flags, weights, true);
  flags.rejectUnknown();
  const workload = await loadWorkload(common);
  const { timeScale, busy } = resolveTimeScale(common, workload);
  const requests = workload.at(timeScale);
  const { json } = tune(experimentBase(common, requests, weights), tuner);
  if (common.json) return writeJson({ ...json, ...(busy ? { time_scale: timeScale, busy_load: busy } : {}) });
  console.log(describeRun(common, timeScale, requests.length, workload.droppedTooLong));
  console.log(`tuner: ${tuner.evaluation} evaluation, guardrails ${tuner.guardrails ? "on" : "off"}, start rtt=${weights.rtt} queue=${weights.queue}\n`);
  console.log(
    formatTable(
      ["step", "samples", "kind", "W_rtt", "W_queue", "p95 TTFT", "p95 E2E", "max share", "verdict", "sigma", "incumbent"],
      json.trajectory.map((t) => [
        String(t.step),
        String(t.samples),
        t.kind,
        fmtFixed(t.weights.rtt, 3),
        fmtFixed(t.weights.queue, 3),
        fmtMs(t.p95_ttft_ms),
        fmtMs(t.e2e_p95_ms),
        fmtPercent(t.max_share),
        t.accepted ? "accepted" : t.guardrail === "pass" ? "rejected" : `guardrail:${t.guardrail}`,
        fmtFixed(t.sigma, 3),
        `${fmtFixed(t.incumbent.rtt, 3)}/${fmtFixed(t.incumbent.queue, 3)}`,
      ]),
    ),
  );
  console.log(
    `\nlearned weights: rtt=${json.weights.rtt}, queue=${json.weights.queue}; best after ${json.samples_to_best} samples; ${json.steps} steps; converged: ${json.converged}`,
  );
  console.log(`tuning run: TTFT p95 ${fmtMs(json.summary.ttft_ms.p95)} ms, E2E p95 ${fmtSeconds(json.summary.e2e_ms.p95)} s, max share ${fmtPercent(json.summary.max_share)}`);
}
