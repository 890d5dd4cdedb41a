// Load generation for scripts/bench/proxy.ts (imported by it; not run on its own): a closed-loop
// undici client that measures requests/s, latency percentiles and the CPU a proxy process spends per
// request (from /proc), and a one-at-a-time TTFT sampler that alternates two origins.
import { readFileSync } from "node:fs";
import { Pool } from "undici";

/** Requests sent before a phase's measurement starts (connections open, JIT warm). */
export const WARMUP_MS = 800;

/** CPU time (user + system, ms) a child process has used, from /proc; null where /proc is absent. */
function cpuMsOf(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th of those.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return null;
  }
}
// Linux USER_HZ; /proc/<pid>/stat reports times in these ticks.
const CLOCK_TICKS_PER_SECOND = 100;

interface PhaseResult {
  rps: number;
  /** CPU the proxy process spent per request (ms), when a proxy process is measured. */
  proxyCpuMsPerRequest?: number;
  /** 1000 / proxyCpuMsPerRequest: the request rate one fully used core would sustain. */
  proxyReqPerCoreSecond?: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  requests: number;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const at = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[at] as number;
}

export const round = (x: number, digits = 3): number => Math.round(x * 10 ** digits) / 10 ** digits;

/** Closed loop: `concurrency` workers each send back-to-back until the phase ends. */
export async function loadPhase(
  origins: readonly string[],
  bodies: readonly Buffer[],
  concurrency: number,
  durationMs: number,
  proxyPid?: number,
): Promise<PhaseResult> {
  const pools = origins.map((origin) => new Pool(origin, { connections: Math.ceil(concurrency / origins.length), pipelining: 1, keepAliveTimeout: 60_000 }));
  const latencies: number[] = [];
  let errors = 0;
  let turn = 0;
  const run = async (until: number, record: boolean): Promise<void> => {
    for (;;) {
      const now = performance.now();
      if (now >= until) return;
      const i = turn++;
      const pool = pools[i % pools.length] as Pool;
      const body = bodies[i % bodies.length] as Buffer;
      try {
        const response = await pool.request({ method: "POST", path: "/v1/chat/completions", headers: { "content-type": "application/json" }, body });
        await response.body.dump({ limit: Number.MAX_SAFE_INTEGER });
        if (response.statusCode !== 200) errors++;
        else if (record) latencies.push(performance.now() - now);
      } catch {
        errors++;
      }
    }
  };
  const warmEnd = performance.now() + WARMUP_MS;
  await Promise.all(Array.from({ length: concurrency }, () => run(warmEnd, false)));
  errors = 0;
  const cpuBefore = cpuMsOf(proxyPid);
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, () => run(start + durationMs, true)));
  const elapsed = performance.now() - start;
  const cpuAfter = cpuMsOf(proxyPid);
  await Promise.all(pools.map((pool) => pool.close()));
  latencies.sort((a, b) => a - b);
  const cpu = cpuBefore !== null && cpuAfter !== null && latencies.length > 0 ? (cpuAfter - cpuBefore) / (latencies.length + errors) : null;
  return {
    rps: round(latencies.length / (elapsed / 1000), 0),
    ...(cpu !== null ? { proxyCpuMsPerRequest: round(cpu, 4), proxyReqPerCoreSecond: round(1000 / cpu, 0) } : {}),
    p50Ms: round(percentile(latencies, 50)),
    p99Ms: round(percentile(latencies, 99)),
    errors,
    requests: latencies.length,
  };
}

/**
 * One request at a time, alternating direct and through the LB (so machine noise hits both alike);
 * time to the first content chunk of a stream. Returns both sorted sample sets.
 */
export async function ttftPairs(
  directOrigin: string,
  lbOrigin: string,
  bodies: readonly Buffer[],
  samples: number,
): Promise<{ direct: number[]; lb: number[] }> {
  const pools = [new Pool(directOrigin, { connections: 1 }), new Pool(lbOrigin, { connections: 1 })];
  const out: [number[], number[]] = [[], []];
  for (let i = 0; i < samples + 50; i++) {
    for (let side = 0; side < 2; side++) {
      const started = performance.now();
      const response = await (pools[side] as Pool).request({
        method: "POST",
        path: "/v1/chat/completions",
        headers: { "content-type": "application/json" },
        body: bodies[i % bodies.length] as Buffer,
      });
      let first: number | null = null;
      for await (const chunk of response.body) {
        if (first === null && (chunk as Buffer).includes('"content"')) first = performance.now() - started;
      }
      // A failed request has no TTFT, and leaving it out would report the LB's added TTFT over the
      // requests that went well, with nothing saying how many did not: stop the benchmark instead.
      if (response.statusCode !== 200 || first === null) {
        await Promise.all(pools.map((pool) => pool.close()));
        throw new Error(`ttft pair ${i}: ${side === 0 ? "the engine" : "the LB"} answered ${response.statusCode} without a first content chunk`);
      }
      if (i >= 50) (out[side] as number[]).push(first);
    }
  }
  await Promise.all(pools.map((pool) => pool.close()));
  return { direct: out[0].sort((a, b) => a - b), lb: out[1].sort((a, b) => a - b) };
}
