// Issue 13, acceptance: ≥ 5,000 generated bodies against a live LB (in its own process, in front of a
// meridian-engine process): no 5xx, no request left unanswered for 10 s, and the LB's RSS back within
// 20 % of its baseline. RSS is measured robustly: in the LB process, after two full garbage
// collections, as the median of five samples; the baseline is taken after a warm-up of valid
// requests and fuzzed bodies from another seed (so the JIT, the pools and the allocator have reached
// their working size), the final figure after the 5,000.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { Pool } from "undici";
import { type FuzzCase, fuzzCases } from "./fuzz-bodies";
import { faultsConfig, forkLb, lbState, MODEL, spawnEngine, waitFor } from "./harness";

const BODIES = 5_000;
const WARM_UP_BODIES = 600;
const CONCURRENCY = 16;
const HANG_MS = 10_000;
const RSS_SAMPLES = 5;

interface Tally {
  byStatus: Map<number, number>;
  serverErrors: string[];
  hangs: string[];
  transportErrors: string[];
}

async function send(pool: Pool, cases: readonly FuzzCase[], tally: Tally): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < cases.length; i = next++) {
      const c = cases[i] as FuzzCase;
      try {
        const response = await pool.request({
          method: "POST",
          path: c.path,
          headers: { "content-type": "application/json" },
          body: c.body,
          signal: AbortSignal.timeout(HANG_MS),
        });
        await response.body.text();
        tally.byStatus.set(response.statusCode, (tally.byStatus.get(response.statusCode) ?? 0) + 1);
        if (response.statusCode >= 500) tally.serverErrors.push(`${response.statusCode} ${c.recipe}`);
      } catch (error) {
        const name = (error as { name?: string }).name;
        if (name === "TimeoutError" || name === "AbortError") tally.hangs.push(c.recipe);
        else tally.transportErrors.push(`${c.recipe}: ${String(error)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

test(`${BODIES} fuzzed bodies: no 5xx, no hang, RSS back within 20 % of baseline`, async (t) => {
  const engine = await spawnEngine("e-fuzz", { maxRunning: 256, itlBaseMs: 2, maxOutputTokens: 4 });
  const lb = await forkLb(faultsConfig("lb-fuzz", [engine]));
  const pool = new Pool(lb.url, { connections: CONCURRENCY, pipelining: 1 });
  try {
    await waitFor("replica healthy", async () => (await lbState(lb.url)).replicas[0]?.healthy === true, 15_000);
    const newTally = (): Tally => ({ byStatus: new Map(), serverErrors: [], hangs: [], transportErrors: [] });
    const warm = newTally();
    await send(pool, fuzzCases(2, WARM_UP_BODIES, MODEL), warm);
    const baseline = [];
    for (let i = 0; i < RSS_SAMPLES; i++) baseline.push(await lb.rssAfterGc());

    const tally = newTally();
    const started = performance.now();
    await send(pool, fuzzCases(1, BODIES, MODEL), tally);
    const seconds = (performance.now() - started) / 1000;
    const after = [];
    for (let i = 0; i < RSS_SAMPLES; i++) after.push(await lb.rssAfterGc());

    const statuses = Object.fromEntries([...tally.byStatus].sort(([a], [b]) => a - b));
    const ratio = median(after) / median(baseline);
    t.diagnostic(
      `fuzz: ${BODIES} bodies in ${seconds.toFixed(1)} s, statuses ${JSON.stringify(statuses)}, ${tally.serverErrors.length} × 5xx, ${tally.hangs.length} hangs; ` +
        `RSS ${(median(baseline) / 2 ** 20).toFixed(1)} → ${(median(after) / 2 ** 20).toFixed(1)} MiB (× ${ratio.toFixed(3)})`,
    );
    assert.deepEqual(tally.serverErrors.slice(0, 10), [], "5xx answers");
    assert.deepEqual(tally.hangs.slice(0, 10), [], "requests unanswered for 10 s");
    assert.deepEqual(tally.transportErrors.slice(0, 10), [], "connections the LB dropped");
    assert.equal(
      [...tally.byStatus.values()].reduce((a, b) => a + b, 0),
      BODIES,
    );
    // Every answer is one a client can act on: 200, or a 4xx in OpenAI's format.
    assert.ok((tally.byStatus.get(200) ?? 0) > BODIES / 10, "hardly any valid request was served");
    assert.ok(ratio <= 1.2, `RSS ${median(after)} bytes after, ${median(baseline)} before`);
  } finally {
    await pool.close();
    await lb.stop();
    await engine.stop();
  }
});
