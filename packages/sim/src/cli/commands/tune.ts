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
  console.log(
    `tuner: ${tuner.evaluation} evaluation, scope ${tuner.scope ?? "lb"}, guardrails ${tuner.guardrails ? "on" : "off"}, start rtt=${weights.rtt} queue=${weights.queue}\n`,
  );
  for (const t of json.tuners) {
    console.log(t.lb === "fleet" ? "fleet tuner (every LB):" : `tuner of ${t.lb}:`);
    console.log(
      formatTable(
        ["step", "samples", "kind", "W_rtt", "W_queue", "p95 TTFT", "incumbent p95", "max share", "verdict", "sigma", "incumbent"],
        t.trajectory.map((step) => [
          String(step.step),
          String(step.samples),
          step.kind,
          fmtFixed(step.weights.rtt, 3),
          fmtFixed(step.weights.queue, 3),
          fmtMs(step.p95_ttft_ms),
          fmtMs(step.trial?.p95_ttft_ms.incumbent),
          fmtPercent(step.max_share),
          step.trial ? step.trial.decision : step.accepted ? "accepted" : step.guardrail === "pass" ? "rejected" : `guardrail:${step.guardrail}`,
          fmtFixed(step.sigma, 3),
          `${fmtFixed(step.incumbent.rtt, 3)}/${fmtFixed(step.incumbent.queue, 3)}`,
        ]),
      ),
    );
    console.log(
      `learned weights: rtt=${t.weights.rtt}, queue=${t.weights.queue}; best after ${t.samples_to_best} of ${t.samples_seen} samples; ${t.steps} steps; converged: ${t.converged}\n`,
    );
  }
  console.log(
    `tuning run: TTFT p95 ${fmtMs(json.summary.ttft_ms.p95)} ms, E2E p95 ${fmtSeconds(json.summary.e2e_ms.p95)} s, max share ${fmtPercent(json.summary.max_share)}`,
  );
}
