// Proxy benchmark: `npm run bench:proxy` (or `npx tsx scripts/bench/proxy.ts`)
//
// Measures, in one run against the same upstreams, requests/s and p50/p99 latency for
//   direct       the load generator calls the upstreams itself (round-robin over two ports),
//   meridian     through meridian-proxy (the real bin, one process = one core),
//   nginx        through nginx round-robin (1 worker, keepalive upstreams), if /usr/sbin/nginx exists,
// for small non-streamed chat requests and for 80 KB streamed chat requests, plus the TTFT that the LB
// adds over calling the upstream directly (p50/p99, one request at a time). Prints ONE JSON object.
//
// Everything is loopback. The upstream is a minimal node:http OpenAI stand-in (zero delay) in a child
// process; the LB and nginx are child processes; the load generator is in-process (undici, closed
// loop). Each phase is time-boxed; the whole run takes about a minute and kills only the processes it
// started, by PID. On this project's 2-core machines the generator, the LB and the upstream share the
// cores, so absolute numbers understate a dedicated deployment; the ratios are the point.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Pool } from "undici";
import { loadPhase, percentile, round, ttftPairs, WARMUP_MS } from "./http-load";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const NGINX = "/usr/sbin/nginx";
const MODEL = "bench-model";
const PHASE_MS = 4_000;
const TTFT_SAMPLES = 400;

// ------------------------------------------------------------------------------------- upstream role

/** Minimal OpenAI-compatible upstream: answers at once; streams 8 content chunks (+usage if asked). */
function runUpstream(ports: number[]): void {
  const completion = JSON.stringify({
    id: "chatcmpl-bench",
    object: "chat.completion",
    created: 0,
    model: MODEL,
    choices: [{ index: 0, message: { role: "assistant", content: "ok ok ok ok" }, finish_reason: "stop" }],
    usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14, prompt_tokens_details: { cached_tokens: 0 } },
  });
  const chunk = (content: string): string =>
    `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":0,"model":"${MODEL}","choices":[{"index":0,"delta":{"content":"${content}"},"finish_reason":null}]}\n\n`;
  const streamBody =
    Array.from({ length: 8 }, (_, i) => chunk(`tok${i} `)).join("") +
    `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":0,"model":"${MODEL}","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n`;
  const usageChunk = `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":0,"model":"${MODEL}","choices":[],"usage":{"prompt_tokens":20000,"completion_tokens":8,"total_tokens":20008,"prompt_tokens_details":{"cached_tokens":0}}}\n\n`;
  const metrics = "sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\nsglang:num_used_tokens 0\n";
  const streamMarker = Buffer.from('"stream":true');
  const usageMarker = Buffer.from('"include_usage":true');
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    if (req.method === "GET") {
      const body =
        req.url === "/metrics" ? metrics : req.url === "/v1/models" ? `{"object":"list","data":[{"id":"${MODEL}","object":"model"}]}` : '{"status":"ok"}';
      res.writeHead(200, { "content-type": req.url === "/metrics" ? "text/plain" : "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => {
      const raw = Buffer.concat(parts);
      // Look only at the head of the body: the flags sit before (or, spliced in, at the start of) the prompt.
      const head = raw.subarray(0, 256);
      if (head.includes(streamMarker) || raw.subarray(-256).includes(streamMarker)) {
        const withUsage = raw.includes(usageMarker);
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        res.end(streamBody + (withUsage ? usageChunk : "") + "data: [DONE]\n\n");
      } else {
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(completion) });
        res.end(completion);
      }
    });
  };
  for (const port of ports) createHttpServer({ keepAliveTimeout: 60_000 }, handler).listen(port, "127.0.0.1");
  process.stdout.write("ready\n");
}

// ------------------------------------------------------------------------------------- node floor role

/**
 * The cheapest proxy node:http + undici can be: read the body, pass it round-robin to an upstream,
 * pipe the answer back. No routing, parsing or bookkeeping. It shows how much of the gap to nginx is
 * the platform's and how much is Meridian's.
 */
async function runNodeFloor(listenPort: number, upstreamPorts: number[]): Promise<void> {
  const { Pool: UndiciPool } = await import("undici");
  const pools = upstreamPorts.map((port) => new UndiciPool(`http://127.0.0.1:${port}`, { connections: 128 }));
  let turn = 0;
  const server = createHttpServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => {
      const pool = pools[turn++ % pools.length] as InstanceType<typeof UndiciPool>;
      pool.dispatch(
        { method: req.method ?? "GET", path: req.url ?? "/", headers: { "content-type": "application/json" }, body: Buffer.concat(parts) },
        {
          onRequestStart() {},
          onResponseStart(_controller, status, headers) {
            res.writeHead(status, { "content-type": String(headers["content-type"] ?? "application/json") });
          },
          onResponseData(_controller, chunk) {
            res.write(chunk);
          },
          onResponseEnd() {
            res.end();
          },
          onResponseError() {
            res.destroy();
          },
        },
      );
    });
  });
  server.listen(listenPort, "127.0.0.1", () => process.stdout.write("ready\n"));
}

// ------------------------------------------------------------------------------------- orchestration

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

const started: ChildProcess[] = [];

function startChild(command: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  started.push(child);
  child.stderr?.on("data", (chunk: Buffer) => {
    const text = chunk.toString();
    if (/error|Error/.test(text)) process.stderr.write(`[${command.split("/").pop()}] ${text}`);
  });
  return child;
}

function stopChildren(): void {
  for (const child of started) {
    if (child.pid !== undefined && child.exitCode === null) {
      try {
        process.kill(child.pid, "SIGTERM");
      } catch {
        // already gone
      }
    }
  }
}

async function waitHttp(url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const pool = new Pool(new URL(url).origin, { connections: 1 });
  try {
    for (;;) {
      try {
        const response = await pool.request({ method: "GET", path: new URL(url).pathname });
        await response.body.dump();
        if (response.statusCode === 200) return;
      } catch {
        // not up yet
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${url}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await pool.close();
  }
}

function chatBody(userText: string, promptBytes: number, stream: boolean): Buffer {
  const filler = "The quick brown fox jumps over the lazy dog. ";
  const system = promptBytes > 0 ? filler.repeat(Math.ceil(promptBytes / filler.length)).slice(0, promptBytes) : "You are terse.";
  return Buffer.from(
    JSON.stringify({
      model: MODEL,
      messages: [
        { role: "system", content: system },
        { role: "user", content: userText },
      ],
      max_tokens: 8,
      ...(stream ? { stream: true } : {}),
    }),
  );
}

/** The single nginx worker (child of the master we started), whose CPU is the proxying cost. */
function nginxWorkerPid(master: ChildProcess | null): number | undefined {
  if (!master?.pid) return undefined;
  try {
    const children = readFileSync(`/proc/${master.pid}/task/${master.pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean);
    return children.length > 0 ? Number(children[0]) : undefined;
  } catch {
    return undefined;
  }
}

function nginxConfig(dir: string, listenPort: number, upstreamPorts: readonly number[]): string {
  return `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  client_max_body_size 16m;
  client_body_buffer_size 256k;
  upstream replicas {
${upstreamPorts.map((port) => `    server 127.0.0.1:${port};`).join("\n")}
    keepalive 128;
  }
  server {
    listen 127.0.0.1:${listenPort};
    location / {
      proxy_pass http://replicas;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`;
}

async function main(): Promise<void> {
  const tempDir = mkdtempSync(join(tmpdir(), "meridian-bench-proxy-"));
  const hardStop = setTimeout(() => {
    process.stderr.write("bench: time limit reached, stopping\n");
    stopChildren();
    process.exit(1);
  }, 170_000);
  hardStop.unref();
  try {
    const upstreamPorts = [await freePort(), await freePort()];
    const upstream = startChild(process.execPath, ["--import", "tsx", SELF, "upstream", ...upstreamPorts.map(String)]);
    await new Promise<void>((resolve) => upstream.stdout?.once("data", () => resolve()));
    await waitHttp(`http://127.0.0.1:${upstreamPorts[0]}/health`);

    const lbPort = await freePort();
    const configPath = join(tempDir, "lb.json");
    writeFileSync(
      configPath,
      JSON.stringify({
        proxy: { warmupTimeoutMs: 2_000, telemetryBufferSize: 4096 },
        lb: {
          schema: "meridian.lb-config/1",
          version: 1,
          lbId: "lb-bench",
          region: "local",
          policy: "gorgo",
          crossRegion: "direct",
          replicas: upstreamPorts.map((port, i) => ({ id: `up-${i}`, url: `http://127.0.0.1:${port}`, region: "local", model: MODEL })),
          limits: { maxConnectionsPerReplica: 256 },
        },
      }),
    );
    const lbProcess = startChild(process.execPath, [join(ROOT, "packages/proxy/bin/meridian-proxy.mjs"), "--config", configPath, "--port", String(lbPort)], {
      LOG_LEVEL: "warn",
    });
    await waitHttp(`http://127.0.0.1:${lbPort}/health`);

    let nginxPort: number | null = null;
    let nginxNote: string | null = null;
    let nginxProcess: ChildProcess | null = null;
    if (existsSync(NGINX)) {
      nginxPort = await freePort();
      const confPath = join(tempDir, "nginx.conf");
      writeFileSync(confPath, nginxConfig(tempDir, nginxPort, upstreamPorts));
      nginxProcess = startChild(NGINX, ["-p", tempDir, "-c", confPath]);
      try {
        await waitHttp(`http://127.0.0.1:${nginxPort}/health`, 10_000);
      } catch (error) {
        nginxNote = `nginx did not start: ${String(error)}`;
        nginxPort = null;
      }
    } else {
      nginxNote = `${NGINX} not installed; nginx comparison skipped`;
    }

    const floorPort = await freePort();
    const floorProcess = startChild(process.execPath, ["--import", "tsx", SELF, "floor", String(floorPort), ...upstreamPorts.map(String)]);
    await waitHttp(`http://127.0.0.1:${floorPort}/health`);

    const direct = upstreamPorts.map((port) => `http://127.0.0.1:${port}`);
    const floor = [`http://127.0.0.1:${floorPort}`];
    const meridian = [`http://127.0.0.1:${lbPort}`];
    const nginx = nginxPort === null ? null : [`http://127.0.0.1:${nginxPort}`];

    const smallBodies = Array.from({ length: 64 }, (_, i) => chatBody(`small request ${i}`, 0, false));
    // 80 KB prompts: 16 conversations sharing a system prompt, each turn distinct.
    const largeBodies = Array.from({ length: 64 }, (_, i) => chatBody(`conversation ${i % 16} turn ${i}`, 80 * 1024, true));

    const SMALL_CONCURRENCY = 64;
    const LARGE_CONCURRENCY = 32;
    const small = {
      direct: await loadPhase(direct, smallBodies, SMALL_CONCURRENCY, PHASE_MS),
      meridian: await loadPhase(meridian, smallBodies, SMALL_CONCURRENCY, PHASE_MS, lbProcess.pid),
      nodeFloor: await loadPhase(floor, smallBodies, SMALL_CONCURRENCY, PHASE_MS, floorProcess.pid),
      nginx: nginx ? await loadPhase(nginx, smallBodies, SMALL_CONCURRENCY, PHASE_MS, nginxWorkerPid(nginxProcess)) : null,
    };
    const large = {
      direct: await loadPhase(direct, largeBodies, LARGE_CONCURRENCY, PHASE_MS),
      meridian: await loadPhase(meridian, largeBodies, LARGE_CONCURRENCY, PHASE_MS, lbProcess.pid),
      nodeFloor: await loadPhase(floor, largeBodies, LARGE_CONCURRENCY, PHASE_MS, floorProcess.pid),
      nginx: nginx ? await loadPhase(nginx, largeBodies, LARGE_CONCURRENCY, PHASE_MS, nginxWorkerPid(nginxProcess)) : null,
    };
    const ttftLarge = await ttftPairs(direct[0] as string, meridian[0] as string, largeBodies, TTFT_SAMPLES);
    const smallStreamBodies = Array.from({ length: 64 }, (_, i) => chatBody(`small streamed ${i}`, 0, true));
    const ttftSmall = await ttftPairs(direct[0] as string, meridian[0] as string, smallStreamBodies, TTFT_SAMPLES);

    const result = {
      benchmark: "proxy",
      machine: { cpus: (await import("node:os")).cpus().length, node: process.version },
      setup: {
        upstream: "minimal node:http OpenAI stand-in, zero delay, 2 ports in one child process",
        meridian: "meridian-proxy bin, 1 process, policy gorgo, direct",
        nodeFloor: "minimal node:http + undici passthrough (no parsing, routing or bookkeeping), 1 process",
        nginx: nginx ? "nginx 1 worker, round-robin, keepalive 128, proxy_buffering off" : nginxNote,
        loadGenerator: `in-process undici, closed loop; ${PHASE_MS} ms per phase after ${WARMUP_MS} ms warm-up`,
        smallConcurrency: SMALL_CONCURRENCY,
        largeConcurrency: LARGE_CONCURRENCY,
      },
      small,
      streamed80KB: large,
      ratios: {
        smallMeridianVsNginx: nginx && small.nginx ? round(small.meridian.rps / small.nginx.rps) : null,
        streamed80KBMeridianVsNginx: nginx && large.nginx ? round(large.meridian.rps / large.nginx.rps) : null,
        smallMeridianVsNginxCpuPerRequest:
          small.nginx?.proxyCpuMsPerRequest && small.meridian.proxyCpuMsPerRequest
            ? round(small.nginx.proxyCpuMsPerRequest / small.meridian.proxyCpuMsPerRequest)
            : null,
        smallMeridianVsDirect: round(small.meridian.rps / small.direct.rps),
        smallMeridianVsNodeFloorCpuPerRequest:
          small.nodeFloor.proxyCpuMsPerRequest && small.meridian.proxyCpuMsPerRequest
            ? round(small.nodeFloor.proxyCpuMsPerRequest / small.meridian.proxyCpuMsPerRequest)
            : null,
        streamed80KBMeridianVsNodeFloorCpuPerRequest:
          large.nodeFloor.proxyCpuMsPerRequest && large.meridian.proxyCpuMsPerRequest
            ? round(large.nodeFloor.proxyCpuMsPerRequest / large.meridian.proxyCpuMsPerRequest)
            : null,
      },
      ttftAddedByLbMs: {
        method: `${TTFT_SAMPLES} sequential requests each way, alternating direct and via LB; p50/p99 of LB minus p50/p99 of direct`,
        streamed80KB: {
          p50: round(percentile(ttftLarge.lb, 50) - percentile(ttftLarge.direct, 50)),
          p99: round(percentile(ttftLarge.lb, 99) - percentile(ttftLarge.direct, 99)),
          directP50: round(percentile(ttftLarge.direct, 50)),
          meridianP50: round(percentile(ttftLarge.lb, 50)),
        },
        smallStreamed: {
          p50: round(percentile(ttftSmall.lb, 50) - percentile(ttftSmall.direct, 50)),
          p99: round(percentile(ttftSmall.lb, 99) - percentile(ttftSmall.direct, 99)),
          directP50: round(percentile(ttftSmall.direct, 50)),
          meridianP50: round(percentile(ttftSmall.lb, 50)),
        },
      },
      targets: {
        lbOverheadP50MsMax: 0.5,
        lbOverheadP99MsMax: 2,
        smallVsNginxMin: 0.6,
        streamed80KBPerCoreMin: 5000,
      },
      loadAverageAfter: (await import("node:os")).loadavg().map((x) => round(x, 2)),
      notes: [
        "proxyCpuMsPerRequest is the proxy process's own CPU (from /proc) per request: the least noisy figure on a shared machine.",
        "Generator, LB, upstream (and nginx) share the machine's cores, so absolute req/s understate a dedicated core.",
        "streamed80KB meridian req/s is for a single LB process, i.e. per core.",
      ],
    };
    process.stdout.write(JSON.stringify(result, null, 2) + "\n");
  } finally {
    stopChildren();
    rmSync(tempDir, { recursive: true, force: true });
    clearTimeout(hardStop);
  }
}

if (process.argv[2] === "upstream") {
  runUpstream(process.argv.slice(3).map(Number));
} else if (process.argv[2] === "floor") {
  const [listen, ...upstreams] = process.argv.slice(3).map(Number);
  void runNodeFloor(listen as number, upstreams);
} else {
  main().catch((error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    stopChildren();
    process.exit(1);
  });
}
