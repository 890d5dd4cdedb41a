import { buildSimRequests, paperFleet, runPolicy } from "@meridian/sim";
import { loadTrace } from "@meridian/workload";
const rows = await loadTrace("/work/wt/shared/traces/mooncake-conversation.jsonl", { timeScale: 1 });
const spec = paperFleet();
const { requests } = buildSimRequests(rows, spec);
for (const p of ["gorgo", "least-request"]) runPolicy({ spec, requests: requests.slice(0, 1000), seed: 1 }, p, { evaluation: "versioned", guardrails: true });
for (let i = 0; i < 3; i++) for (const p of ["gorgo", "least-request"]) {
  const t = performance.now();
  const r = runPolicy({ spec, requests, seed: 1 }, p, { evaluation: "versioned", guardrails: true });
  console.log(p, Math.round(performance.now() - t), r.summary.completed, r.summary.failed, JSON.stringify(r.summary.failed_by_code));
}
