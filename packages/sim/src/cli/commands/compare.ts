// meridian-sim compare: policies side by side on one workload.

import { compare, DEFAULT_COMPARE_POLICIES, ONLINE_GORGO } from "../../fleet";
import type { FlagReader } from "../args";
import { describeRun, experimentBase, loadWorkload, readCommon, readPolicies, readTuner, readWeights, resolveTimeScale, writeJson } from "../common";
import { fmtPercent, formatTable } from "../format";
import { JsonlSink } from "../jsonl";
import { policyTable } from "../tables";

export async function runCompare(flags: FlagReader): Promise<void> {
  const common = readCommon(flags);
  const policies = readPolicies(flags, DEFAULT_COMPARE_POLICIES);
  const weights = readWeights(flags);
  const tuner = readTuner(flags, weights, policies.includes(ONLINE_GORGO));
  const oracleGap = flags.onOff("oracle-gap", true);
  const jsonlPath = flags.string("jsonl");
  flags.rejectUnknown();
  const workload = await loadWorkload(common);
  // Opened before anything is simulated: a path that cannot be written fails now, not after the runs.
  const jsonl = jsonlPath === undefined ? undefined : new JsonlSink(jsonlPath);
  const simulate = () => {
    const { timeScale, busy } = resolveTimeScale(common, workload);
    const requests = workload.at(timeScale);
    const { json } = compare(experimentBase(common, requests, weights), policies, tuner, {
      oracle: oracleGap,
      ...(jsonl ? { onRecords: (policy, served, refused) => jsonl.writeRun(policy, served, refused) } : {}),
    });
    return { timeScale, busy, requests, json };
  };
  let result: ReturnType<typeof simulate>;
  try {
    result = simulate();
  } catch (error) {
    jsonl?.abort();
    throw error;
  }
  await jsonl?.close();
  const { timeScale, busy, requests, json } = result;
  if (common.json) return writeJson({ ...json, dropped_too_long: workload.droppedTooLong, ...(busy ? { time_scale: timeScale, busy_load: busy } : {}) });
  console.log(describeRun(common, timeScale, requests.length, workload.droppedTooLong));
  console.log(`weights for gorgo: rtt=${weights.rtt}, queue=${weights.queue}; index: ${json.index}\n`);
  console.log(policyTable(json.policies));
  console.log("\nrequests per replica:");
  console.log(
    formatTable(
      ["policy", ...Object.keys(json.policies[0]?.replica_share ?? {})],
      json.policies.map((p) => [p.name, ...Object.values(p.replica_share).map((s) => fmtPercent(s))]),
    ),
  );
  for (const p of json.policies) {
    if (p.tuner)
      console.log(
        `\n${p.name}: tuned to rtt=${p.tuner.weights.rtt}, queue=${p.tuner.weights.queue} in ${p.tuner.steps} steps (converged: ${p.tuner.converged})`,
      );
  }
}
