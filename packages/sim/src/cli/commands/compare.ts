// meridian-sim compare: policies side by side on one workload.

import { createWriteStream, existsSync, type WriteStream } from "node:fs";
import { dirname, resolve } from "node:path";
import { compare, DEFAULT_COMPARE_POLICIES, ONLINE_GORGO, type RequestRecord } from "../../fleet";
import type { FlagReader } from "../args";
import { UsageError } from "../args";
import { describeRun, experimentBase, loadWorkload, readCommon, readPolicies, readTuner, readWeights, resolveTimeScale, writeJson } from "../common";
import { fmtPercent, formatTable } from "../format";
import { policyTable } from "../tables";

export async function runCompare(flags: FlagReader): Promise<void> {
  const common = readCommon(flags);
  const policies = readPolicies(flags, DEFAULT_COMPARE_POLICIES);
  const weights = readWeights(flags);
  const tuner = readTuner(flags, weights, policies.includes(ONLINE_GORGO));
  const oracleGap = flags.onOff("oracle-gap", true);
  const jsonlPath = flags.string("jsonl");
  if (jsonlPath !== undefined && !existsSync(dirname(resolve(jsonlPath)))) {
    throw new UsageError(`--jsonl: directory ${dirname(resolve(jsonlPath))} does not exist`);
  }
  flags.rejectUnknown();
  const workload = await loadWorkload(common);
  const { timeScale, busy } = resolveTimeScale(common, workload);
  const requests = workload.at(timeScale);
  let jsonl: WriteStream | undefined;
  if (jsonlPath !== undefined) jsonl = createWriteStream(jsonlPath);
  const { json } = compare(experimentBase(common, requests, weights), policies, tuner, {
    oracle: oracleGap,
    ...(jsonl
      ? { onRecords: (policy: string, records: RequestRecord[]) => records.forEach((r) => jsonl!.write(`${JSON.stringify({ policy, ...r })}\n`)) }
      : {}),
  });
  if (jsonl) await new Promise<void>((resolve, reject) => jsonl!.end((err?: Error | null) => (err ? reject(err) : resolve())));
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
