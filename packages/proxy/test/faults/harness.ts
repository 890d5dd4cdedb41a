// What the fault suite (npm run test:faults) runs its faults against: real `meridian-engine` processes
// (so SIGKILL, SIGSTOP and SIGCONT hit a process, as in production), real `meridian-proxy` processes
// for SIGTERM, and an LB child that can be asked to collect garbage and report its RSS (the fuzz
// test). Everything binds 127.0.0.1 on port 0; every process is stopped by its PID, by the test that
// started it, and a safety net kills what a crashed test left behind. Waits are for observable
// conditions, bounded by times derived from the configured intervals.
//
// Run as a child (MERIDIAN_FAULTS_LB_CHILD=1, see forkLb) this module starts one LB from the config
// it is sent and answers "memory" messages.
import { type ChildProcess, fork, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { pino } from "pino";
import { request } from "undici";
import type { LbConfigInput, LbState } from "@meridian/protocol";
import { startProxy, type ProcessSettingsInput } from "../../src/index";
import { MODEL, TOKEN } from "../helpers";

export { chatBody, MODEL, TOKEN, waitFor } from "../helpers";

const ENGINE_BIN = fileURLToPath(new URL("../../../sim/bin/meridian-engine.mjs", import.meta.url));
const PROXY_BIN = fileURLToPath(new URL("../../bin/meridian-proxy.mjs", import.meta.url));

// ------------------------------------------------------------------------------------ processes

const started = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of started) if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) killQuietly(child.pid, "SIGKILL");
});

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

export interface ChildHandle {
  child: ChildProcess;
  pid: number;
  signal(signal: NodeJS.Signals): void;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** SIGCONT (in case it was stopped), then SIGKILL, by PID; resolves when it has exited. */
  stop(): Promise<void>;
}

function handleOf(child: ChildProcess): ChildHandle {
  if (child.pid === undefined) throw new Error("child process did not start");
  started.add(child);
  const pid = child.pid;
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  void exited.then(() => started.delete(child));
  return {
    child,
    pid,
    signal: (signal) => killQuietly(pid, signal),
    exited,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      killQuietly(pid, "SIGCONT");
      killQuietly(pid, "SIGKILL");
      await exited;
    },
  };
}

/** Resolves with the first line of `stream` that matches, or rejects after `timeoutMs`. */
function lineMatching(child: ChildProcess, stream: "stdout" | "stderr", pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let buffered = "";
    const source = child[stream];
    if (!source) return reject(new Error(`no ${stream}`));
    const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms: ${buffered.slice(-500)}`)), timeoutMs);
    const onData = (chunk: Buffer): void => {
      buffered += chunk.toString("utf8");
      const match = pattern.exec(buffered);
      if (!match) return;
      clearTimeout(timer);
      source.off("data", onData);
      resolve(match);
    };
    source.on("data", onData);
    child.once("exit", (code) => reject(new Error(`exited (${code}) before printing ${pattern}: ${buffered.slice(-500)}`)));
  });
}

export interface EngineProcess extends ChildHandle {
  id: string;
  url: string;
}

export interface EngineParamsInput {
  maxRunning?: number;
  prefillTokensPerSec?: number;
  itlBaseMs?: number;
  maxOutputTokens?: number;
  kvCapacityTokens?: number;
}

/** Starts `meridian-engine` (the simulated SGLang server) as its own process on a free port. */
export async function spawnEngine(id: string, params: EngineParamsInput = {}): Promise<EngineProcess> {
  const child = spawn(
    process.execPath,
    [ENGINE_BIN, "--id", id, "--region", "local", "--model", MODEL, "--rtt-matrix", "{}", "--params", JSON.stringify(params), "--log-level", "warn"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const handle = handleOf(child);
  child.stderr?.resume();
  const match = await lineMatching(child, "stdout", /listening on (http:\/\/127\.0\.0\.1:\d+)/, 30_000);
  return { ...handle, id, url: match[1] as string };
}

export interface LbProcess extends ChildHandle {
  url: string;
  dir: string;
}

/** Starts the real `meridian-proxy` bin with this config, on a free port. */
export async function spawnLb(config: LbConfigInput, settings: ProcessSettingsInput = {}): Promise<LbProcess> {
  const dir = mkdtempSync(join(tmpdir(), "meridian-faults-lb-"));
  const configPath = join(dir, "lb.json");
  writeFileSync(configPath, JSON.stringify({ proxy: { warmupTimeoutMs: 10_000, ...settings }, lb: config }));
  const child = spawn(process.execPath, [PROXY_BIN, "--config", configPath, "--port", "0"], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, MERIDIAN_LB_TOKEN: TOKEN, LOG_LEVEL: "info" },
  });
  const handle = handleOf(child);
  child.stderr?.resume();
  const match = await lineMatching(child, "stdout", /"url":"(http:\/\/127\.0\.0\.1:\d+)"[^\n]*meridian-proxy listening/, 30_000);
  child.stdout?.resume();
  void handle.exited.then(() => rmSync(dir, { recursive: true, force: true }));
  return { ...handle, url: match[1] as string, dir };
}

export interface ForkedLb extends ChildHandle {
  url: string;
  /** RSS in bytes after two full garbage collections in the LB process. */
  rssAfterGc(): Promise<number>;
}

/** Starts an LB in a child process run with --expose-gc, for measuring its memory. */
export async function forkLb(config: LbConfigInput): Promise<ForkedLb> {
  const child = fork(fileURLToPath(import.meta.url), [], {
    execArgv: ["--expose-gc", "--import", "tsx"],
    env: { ...process.env, MERIDIAN_FAULTS_LB_CHILD: "1" },
    stdio: ["ignore", "ignore", "pipe", "ipc"],
  });
  const handle = handleOf(child);
  child.stderr?.resume();
  child.send({ kind: "start", config });
  const [ready] = (await Promise.race([
    once(child, "message"),
    handle.exited.then((code) => Promise.reject(new Error(`LB child exited (${code}) before starting`))),
  ])) as [{ url: string }];
  let nextId = 0;
  return {
    ...handle,
    url: ready.url,
    rssAfterGc: async () => {
      const id = nextId++;
      child.send({ kind: "memory", id });
      for (;;) {
        const [message] = (await once(child, "message")) as [{ id: number; rss: number }];
        if (message.id === id) return message.rss;
      }
    },
  };
}

async function runLbChild(): Promise<void> {
  const [message] = (await once(process, "message")) as [{ config: LbConfigInput }];
  const lb = await startProxy({ config: message.config, token: TOKEN, logger: pino({ level: "silent" }), seed: 7, settings: { port: 0, host: "127.0.0.1" } });
  process.send?.({ url: lb.url });
  const gc = (globalThis as { gc?: () => void }).gc;
  process.on("message", (request: { kind: string; id: number }) => {
    if (request.kind !== "memory") return;
    gc?.();
    // A second pass after a turn collects what the first one's finalisers released.
    setImmediate(() => {
      gc?.();
      process.send?.({ id: request.id, rss: process.memoryUsage().rss });
    });
  });
}

if (process.env.MERIDIAN_FAULTS_LB_CHILD === "1") void runLbChild();

// ------------------------------------------------------------------------------------ LB config and HTTP

export function faultsConfig(lbId: string, engines: readonly { id: string; url: string }[], extra: Partial<LbConfigInput> = {}): LbConfigInput {
  return {
    schema: "meridian.lb-config/2",
    version: 1,
    lbId,
    region: "local",
    replicas: engines.map((e) => ({ id: e.id, url: e.url, region: "local", model: MODEL, engine: "sglang" })),
    probes: { rttIntervalMs: 500, scrapeIntervalMs: 250, unhealthyAfter: 3 },
    ...extra,
  };
}

export async function lbState(url: string): Promise<LbState> {
  const response = await request(`${url}/admin/state`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`/admin/state: ${response.statusCode} ${text}`);
  return JSON.parse(text) as LbState;
}

export async function metricValue(url: string, series: string): Promise<number> {
  const text = await (await request(`${url}/metrics`)).body.text();
  const escaped = series.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const match = new RegExp(`^${escaped} (\\S+)$`, "m").exec(text);
  return match ? Number(match[1]) : 0;
}

/** What a client saw of one streamed request. */
export interface StreamOutcome {
  status: number;
  replica: string | null;
  /** performance.now() of the first body byte, null when none came. */
  firstByteAt: number | null;
  /** The stream ended with data: [DONE]. */
  complete: boolean;
  /** The `error` object of an SSE error event, when one came. */
  errorEvent: { message: string; type: string; code: string } | null;
  /** The body of a non-stream (error) answer. */
  text: string;
  /** The connection failed (reset, refused) rather than ending. */
  transportError: string | null;
}

/** Sends one streamed chat request and records what came back, event by event; `onFirstByte` is told
 * which replica answered (the X-Meridian-Replica header) when the first body byte arrives. */
export async function streamChat(url: string, body: Record<string, unknown>, onFirstByte?: (replica: string | null) => void): Promise<StreamOutcome> {
  const outcome: StreamOutcome = { status: 0, replica: null, firstByteAt: null, complete: false, errorEvent: null, text: "", transportError: null };
  try {
    const response = await request(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...body, stream: true }),
    });
    outcome.status = response.statusCode;
    const replica = response.headers["x-meridian-replica"];
    outcome.replica = typeof replica === "string" ? replica : null;
    for await (const chunk of response.body) {
      if (outcome.firstByteAt === null) {
        outcome.firstByteAt = performance.now();
        onFirstByte?.(outcome.replica);
      }
      outcome.text += (chunk as Buffer).toString("utf8");
    }
  } catch (error) {
    outcome.transportError = error instanceof Error ? error.message : String(error);
  }
  for (const event of outcome.text.split("\n\n")) {
    const data = event.startsWith("data: ") ? event.slice(6) : null;
    if (data === "[DONE]") outcome.complete = true;
    else if (data?.startsWith('{"error"')) outcome.errorEvent = (JSON.parse(data) as { error: StreamOutcome["errorEvent"] }).error;
  }
  return outcome;
}

/** `promise`, or a rejection naming `what` once `timeoutMs` has passed (the timer never outlives it). */
export async function within<T>(what: string, promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms: ${what}`)), timeoutMs))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Streams one chat completion through the openai SDK, calls `atSecondChunk` when its second chunk
 * arrives, and resolves with the APIError the SDK raised; rejects when the stream ends without one. */
export async function sdkStreamError(url: string, maxTokens: number, atSecondChunk: () => void): Promise<InstanceType<typeof OpenAI.APIError>> {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "a long answer, please" }],
    max_tokens: maxTokens,
    stream: true,
  });
  let chunks = 0;
  try {
    for await (const chunk of stream) {
      if (++chunks === 2) atSecondChunk();
      void chunk;
    }
  } catch (error) {
    if (error instanceof OpenAI.APIError && chunks >= 2) return error;
    throw error;
  }
  throw new Error(`the stream ended after ${chunks} chunks without an error`);
}
