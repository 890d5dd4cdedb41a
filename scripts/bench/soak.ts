// Soak: `npx tsx scripts/bench/soak.ts [--duration-s 60] [--concurrency 500] [--limits config|learned]`
// (npm run bench:soak)
//
// Keeps `concurrency` streamed chat requests in flight through one meridian-proxy for `duration-s`
// seconds (closed loop: each client sends its next request when its stream ends), in front of two
// meridian-engine processes sized to admit them all. Then it waits for the LB's books to settle and
// checks that every in-flight and queued-token counter is back to 0. Prints ONE JSON object: requests,
// errors by kind, TTFT and E2E percentiles, the most requests seen in flight, the final counters
// (from /admin/state and from /metrics), and the LB's RSS at start and end.
//
// Loopback only. It starts the engines and the LB itself, on free ports, and stops them by PID when
// done (or when its own time limit passes). On this project's shared 2-core machines the client, the
// LB and the engines share the cores: the point is 0 errors and counters back to 0, not throughput.
import { readFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Pool } from "undici";
import { generateLbToken } from "@meridian/protocol/credentials";
import { percentile, round } from "./http-load";
import { freePort, startChild, stopChildren, waitHttp } from "./processes";

const MODEL = "soak-model";
/** The LB token, in the format the console issues (the proxy refuses any other). */
const TOKEN = generateLbToken();
const ENGINES = 2;
// Each engine can run its share of the streams at once, with prefill to spare; 64 tokens at ~20 ms
// make each stream last a second or two. Each replica's maxConcurrency is the engine's maxRunning:
// left to learn it, the LB takes the running count of the first scrape that caught requests waiting
// for the engine's next step as the replica's limit, and holds (then refuses after queueMaxWaitMs)
// what exceeds it. That is the SkyLB rule working as designed on a transient, and a separate matter
// from what this soak checks (the proxy README's "Failure behaviour" has the figures of both).
const ENGINE_PARAMS = { maxRunning: 400, kvCapacityTokens: 4_000_000, prefillTokensPerSec: 400_000, itlBaseMs: 20, itlPerSeqMs: 0.01, maxOutputTokens: 64 };
const SETTLE_TIMEOUT_MS = 30_000;

const { values } = parseArgs({
  options: {
    "duration-s": { type: "string", default: "60" },
    concurrency: { type: "string", default: "500" },
    // config: each replica's maxConcurrency is the engine's maxRunning; learned: none is set, and the
    // LB learns each replica's admitted concurrency from its scrapes (proxy README, "Admitted concurrency").
    limits: { type: "string", default: "config" },
  },
});
if (values.limits !== "config" && values.limits !== "learned") throw new Error("--limits must be config or learned");
const learnedLimits = values.limits === "learned";
const durationMs = Number(values["duration-s"]) * 1000;
const concurrency = Number(values.concurrency);
if (!(durationMs > 0) || !Number.isInteger(concurrency) || concurrency < 1) throw new Error("--duration-s and --concurrency must be positive");

function rssMiB(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb === undefined ? null : round(Number(kb) / 1024, 1);
  } catch {
    return null;
  }
}

interface LbReplicaState {
  id: string;
  inFlight: number;
  queuedTokens: number;
  peerQueuedTokens: number;
}

async function adminState(pool: Pool): Promise<{ replicas: LbReplicaState[]; queue: { length: number } }> {
  const response = await pool.request({ method: "GET", path: "/admin/state", headers: { authorization: `Bearer ${TOKEN}` } });
  return JSON.parse(await response.body.text()) as { replicas: LbReplicaState[]; queue: { length: number } };
}

/** Sum of every sample of one metric family in the LB's /metrics text. */
function metricSum(text: string, name: string): number {
  let total = 0;
  for (const line of text.split("\n")) if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) total += Number(line.slice(line.lastIndexOf(" ") + 1));
  return total;
}

async function main(): Promise<void> {
  const tempDir = mkdtempSync(join(tmpdir(), "meridian-soak-"));
  const hardStop = setTimeout(() => {
    process.stderr.write("soak: time limit reached, stopping\n");
    stopChildren();
    process.exit(1);
  }, durationMs + 180_000);
  hardStop.unref();
  try {
    const engineUrls: string[] = [];
    for (let i = 0; i < ENGINES; i++) {
      const port = await freePort();
      startChild(process.execPath, [
        "packages/sim/bin/meridian-engine.mjs",
        ...["--port", String(port), "--id", `soak-${i}`, "--region", "local", "--model", MODEL, "--rtt-matrix", "{}"],
        ...["--params", JSON.stringify(ENGINE_PARAMS), "--log-level", "warn"],
      ]);
      engineUrls.push(`http://127.0.0.1:${port}`);
    }
    for (const url of engineUrls) await waitHttp(`${url}/health`, 30_000);
    const lbPort = await freePort();
    const configPath = join(tempDir, "lb.json");
    writeFileSync(
      configPath,
      JSON.stringify({
        proxy: { warmupTimeoutMs: 5_000 },
        lb: {
          schema: "meridian.lb-config/2",
          version: 1,
          lbId: "lb-soak",
          region: "local",
          replicas: engineUrls.map((url, i) => ({
            id: `soak-${i}`,
            url,
            region: "local",
            model: MODEL,
            ...(learnedLimits ? {} : { maxConcurrency: ENGINE_PARAMS.maxRunning }),
          })),
          limits: { maxConnectionsPerReplica: 1024, queueMaxLength: 4096 },
          probes: { rttIntervalMs: 1_000, scrapeIntervalMs: 250 },
        },
      }),
    );
    const lb = startChild(process.execPath, ["packages/proxy/bin/meridian-proxy.mjs", "--config", configPath, "--port", String(lbPort)], {
      LOG_LEVEL: "warn",
      MERIDIAN_LB_TOKEN: TOKEN,
    });
    const lbUrl = `http://127.0.0.1:${lbPort}`;
    await waitHttp(`${lbUrl}/health`, 30_000);
    const rssStart = rssMiB(lb.pid);

    const pool = new Pool(lbUrl, { connections: concurrency, pipelining: 1, keepAliveTimeout: 60_000, bodyTimeout: 60_000, headersTimeout: 60_000 });
    const admin = new Pool(lbUrl, { connections: 2 });
    const errors = { status: 0, incomplete: 0, errorEvent: 0, transport: 0 };
    const statuses: Record<string, number> = {};
    const ttft: number[] = [];
    const e2e: number[] = [];
    let requests = 0;
    let maxInFlight = 0;
    const start = performance.now();
    const until = start + durationMs;
    const client = async (id: number): Promise<void> => {
      for (let turn = 0; performance.now() < until; turn++) {
        const sent = performance.now();
        const body = JSON.stringify({
          model: MODEL,
          messages: [
            { role: "system", content: "You are a patient assistant. ".repeat(8) },
            { role: "user", content: `client ${id} turn ${turn}: tell me something about the number ${id * 1000 + turn}` },
          ],
          max_tokens: 64,
          stream: true,
          user: `soak-${id}`,
        });
        requests++;
        try {
          const response = await pool.request({ method: "POST", path: "/v1/chat/completions", headers: { "content-type": "application/json" }, body });
          statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1;
          let text = "";
          let first: number | null = null;
          for await (const chunk of response.body) {
            if (first === null) first = performance.now() - sent;
            text += (chunk as Buffer).toString("utf8");
          }
          if (response.statusCode !== 200) errors.status++;
          else if (text.includes('data: {"error"')) errors.errorEvent++;
          else if (!text.endsWith("data: [DONE]\n\n")) errors.incomplete++;
          else {
            e2e.push(performance.now() - sent);
            if (first !== null) ttft.push(first);
          }
        } catch {
          errors.transport++;
        }
      }
    };
    const sampler = setInterval(() => {
      adminState(admin).then(
        (state) =>
          (maxInFlight = Math.max(
            maxInFlight,
            state.replicas.reduce((total, r) => total + r.inFlight, 0),
          )),
        () => undefined,
      );
    }, 2_000);
    await Promise.all(Array.from({ length: concurrency }, (_, i) => client(i)));
    clearInterval(sampler);
    const elapsedS = (performance.now() - start) / 1000;
    const rssEnd = rssMiB(lb.pid);

    // The books must settle to 0 once the last stream has ended.
    const settleStart = performance.now();
    let state = await adminState(admin);
    const settled = (s: typeof state): boolean =>
      s.queue.length === 0 && s.replicas.every((r) => r.inFlight === 0 && r.queuedTokens === 0 && r.peerQueuedTokens === 0);
    while (!settled(state) && performance.now() - settleStart < SETTLE_TIMEOUT_MS) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      state = await adminState(admin);
    }
    const metrics = await (await admin.request({ method: "GET", path: "/metrics" })).body.text();
    await Promise.all([pool.close(), admin.close()]);
    ttft.sort((a, b) => a - b);
    e2e.sort((a, b) => a - b);
    const errorCount = errors.status + errors.incomplete + errors.errorEvent + errors.transport;
    const result = {
      benchmark: "soak",
      setup: {
        durationS: durationMs / 1000,
        concurrency,
        engines: `${ENGINES} meridian-engine processes, ${JSON.stringify(ENGINE_PARAMS)}`,
        lb: `meridian-proxy bin, 1 process, policy gorgo, direct, replica limits ${learnedLimits ? "learned from scrapes" : "from config (maxConcurrency = maxRunning)"}`,
        client: "in-process undici, closed loop, streamed chat, 64 output tokens",
      },
      requests,
      completed: e2e.length,
      streamsPerSecond: round(e2e.length / elapsedS, 1),
      errors: { total: errorCount, ...errors },
      statuses,
      ttftMs: { p50: round(percentile(ttft, 50), 1), p99: round(percentile(ttft, 99), 1) },
      e2eMs: { p50: round(percentile(e2e, 50), 1), p99: round(percentile(e2e, 99), 1) },
      maxInFlightSeen: maxInFlight,
      final: {
        settledWithinMs: Math.round(performance.now() - settleStart),
        inFlight: state.replicas.reduce((total, r) => total + r.inFlight, 0),
        queuedTokens: state.replicas.reduce((total, r) => total + r.queuedTokens + r.peerQueuedTokens, 0),
        heldInQueue: state.queue.length,
        metricsInFlight: metricSum(metrics, "meridian_lb_in_flight_requests"),
        metricsQueuedTokens: metricSum(metrics, "meridian_lb_queued_tokens"),
        metricsQueueLength: metricSum(metrics, "meridian_lb_queue_length"),
      },
      lbRssMiB: { start: rssStart, end: rssEnd },
      pass: errorCount === 0 && settled(state),
      loadAverageAfter: loadavg().map((x) => round(x, 2)),
    };
    process.stdout.write(JSON.stringify(result, null, 2) + "\n");
    process.exitCode = result.pass ? 0 : 1;
  } finally {
    stopChildren();
    rmSync(tempDir, { recursive: true, force: true });
    clearTimeout(hardStop);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`soak failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  stopChildren();
  process.exit(1);
});
