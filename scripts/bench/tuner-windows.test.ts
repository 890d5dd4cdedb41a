import assert from "node:assert/strict";
import { test } from "node:test";
import { bundledTracePath, loadTrace } from "@meridian/workload";
import { regime, requestsOf } from "./tuner-regimes";
import { windowsAlone } from "./tuner-windows";

test("a window longer than the workload is marked as none, with no ratios; the windows that fit keep theirs", async () => {
  const r = regime("short");
  const requests = requestsOf(r, await loadTrace(bundledTracePath()), 0.5);
  const out = windowsAlone(r.spec, requests, { incumbent: { rtt: 0.5, queue: 0.1 }, candidate: { rtt: 5, queue: 0.05 } }, [100, 2000], [1]);
  const [fits, tooLong] = out.windows;
  assert.equal(fits!.windows, Math.floor(requests.length / 100));
  assert.ok("ratio_candidate_to_incumbent" in fits!);
  for (const v of Object.values(fits!.ratio_candidate_to_incumbent!)) assert.ok(Number.isFinite(v), `ratio ${v}`);
  assert.deepEqual(tooLong, { window_requests: 2000, windows: 0, note: `the workload (${requests.length} requests) is shorter than the window` });
});
