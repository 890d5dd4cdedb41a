// meridian-sim grid: the (W_rtt, W_queue) landscape on one workload, its optimum and the defaults' distance.

import { grid, NoOptimumError } from "../../fleet";
import { type FlagReader, UsageError } from "../args";
import { describeRun, loadWorkload, progressReporter, readBounds, readCommon, readWeights, resolveTimeScale, writeJson } from "../common";
import { gridTable } from "../tables";

export async function runGrid(flags: FlagReader): Promise<void> {
  const common = readCommon(flags);
  const defaults = readWeights(flags);
  const bounds = readBounds(flags);
  // A landscape needs a range on each axis: with lo = hi the grid would be one row, reported as n × n.
  for (const name of ["rtt", "queue"] as const) {
    const [lo, hi] = bounds[name];
    if (!(lo < hi)) throw new UsageError(`--${name}-bounds: a grid needs lo < hi, got ${lo},${hi}`);
  }
  const points = flags.number("points", { min: 2, integer: true }) ?? 9;
  flags.rejectUnknown();
  const workload = await loadWorkload(common);
  const { timeScale, busy } = resolveTimeScale(common, workload);
  const requests = workload.at(timeScale);
  let json: ReturnType<typeof grid>;
  try {
    json = grid(common.spec, requests, common.seed, {
      bounds,
      pointsPerAxis: points,
      defaults,
      index: common.index,
      onProgress: progressReporter(common.quiet),
    });
  } catch (error) {
    // An input this fleet cannot serve, said in one line (exit 2) as the other input errors are.
    if (error instanceof NoOptimumError) throw new UsageError(error.message);
    throw error;
  }
  if (common.json) return writeJson({ ...json, time_scale: timeScale, ...(busy ? { busy_load: busy } : {}) });
  console.log(describeRun(common, timeScale, requests.length, workload.droppedTooLong));
  const index = common.index === "learned" ? "" : ` (index: ${common.index})`;
  console.log(
    `gorgo on every LB${index}, ${points}×${points} weights log-spaced over W_rtt [${bounds.rtt.join(", ")}] × W_queue [${bounds.queue.join(", ")}]\n`,
  );
  console.log(gridTable(json));
}
