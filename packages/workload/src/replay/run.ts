// The open-loop replay runner: sends each request at its (scaled) timestamp whether or not earlier
// ones have finished, as the paper's trace replay did, with a cap on concurrent requests. A request
// that is due while the cap is reached waits for a slot, and that wait is recorded, so client-side
// overload is visible instead of silently stretching the schedule. One exception to open-loop: a
// generator turn is a chat user's next message, sent only once the reply to the previous turn has
// ended (a real client cannot send turn n+1 earlier); that hold is recorded as turnWaitMs.
//
// runReplay() is bounded (trace end, duration or max requests); startLoadGenerator() runs the
// multi-turn generator until stop(), for the demo fleet.
import { setMaxListeners } from "node:events";
import { performance } from "node:perf_hooks";
import { Agent, type Dispatcher } from "undici";
import type { MultiTurnOptions } from "../generator/multi-turn";
import { TurnChain } from "../generator/turns";
import { equalWeights, type RegionWeights, type TraceControls } from "../trace/controls";
import type { TraceReadOptions } from "../trace/reader";
import type { TraceRequest } from "../trace/types";
import { DEFAULT_REPLAY_MODEL } from "./config";
import { chatCompletionsUrl, createEntrypointResolver, type EntrypointMap, type EntrypointResolver } from "./entrypoints";
import { generatorItems, type ReplayItem, type Skipped, traceItems } from "./items";
import { openOutputs } from "./output";
import { summarise, type ReplayRecord, type ReplaySummary } from "./stats";
import { streamChat } from "./stream-chat";
import { assertTimerMs, MAX_TIMER_MS } from "./timer-limit";

export interface ReplayCommonOptions {
  /** Region → entrypoint URL map, or the URL of such a map (re-fetched every refreshMs). */
  entrypoints: EntrypointMap | string;
  /** Bearer token for the entrypoint map URL. */
  entrypointsToken?: string;
  /** Map re-fetch interval (default 5000 ms). */
  refreshMs?: number;
  /** Maximum requests in flight (default 64). */
  concurrency?: number;
  /** `model` in the request body (default DEFAULT_REPLAY_MODEL, the demo's). */
  model?: string;
  /** Per-request timeout (default 300 000 ms). */
  requestTimeoutMs?: number;
  /** Stop scheduling after this many requests. */
  maxRequests?: number;
  /** Stop scheduling requests due at or after this time (ms from the start). */
  durationMs?: number;
  /** Cap every request's max_tokens (the paper's preset used 128). */
  maxOutputTokens?: number;
  /** Send `ignore_eos: true` so engines generate exactly max_tokens. */
  ignoreEos?: boolean;
  /** Bearer token sent to the entrypoints. */
  apiKey?: string;
  /** Send the conversation key as `x-session-id` (default true). */
  sendSessionId?: boolean;
  /** Requests waiting for a slot beyond this many are dropped and recorded (default 10 000). */
  maxPending?: number;
  /** Called with every finished request. */
  onRecord?: (record: ReplayRecord) => void;
  signal?: AbortSignal;
  /** undici dispatcher for the requests (default: an Agent with `concurrency` connections per origin). */
  dispatcher?: Dispatcher;
}

export interface RunReplayOptions extends ReplayCommonOptions, TraceControls {
  /**
   * A trace file or rows in memory, sent in timestamp order (see items.ts). Window and time scale
   * (TraceControls) apply to the rows' source timestamps in both cases. Without a trace, the
   * multi-turn generator runs.
   */
  trace?: string | readonly TraceRequest[];
  /** Format and bad-row handling for a trace file. */
  traceRead?: Pick<TraceReadOptions, "format" | "blockTokens" | "onInvalid" | "onSkip">;
  /** Skip trace rows whose prompt is longer than this (the paper dropped > 24,000 tokens). */
  maxInputTokens?: number;
  /** Region weights for trace rows (default: equal over the regions of the entrypoint map). */
  regionWeights?: RegionWeights;
  /** Multi-turn generator options when there is no trace (its regions default likewise). */
  generator?: MultiTurnOptions;
  /**
   * Write one JSON line per request here. Opened (with summaryPath) before anything is sent: a path
   * that cannot be opened rejects with a ReplayOutputError at once, and a write that fails later
   * rejects at the end with a ReplayOutputError that carries the run's summary.
   */
  outPath?: string;
  /** Write the summary JSON here. */
  summaryPath?: string;
}

/** A counting semaphore whose waiters are served in arrival order. */
class Slots {
  private free: number;
  private readonly waiters: (() => void)[] = [];
  constructor(size: number) {
    this.free = size;
  }
  get waiting(): number {
    return this.waiters.length;
  }
  acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }
  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free++;
  }
}

/** A run's signal has a listener for every request in flight (streamChat) and every sleep, each
 * removed when it ends. Past 10 at once Node warned of a listener leak that is none ("Possible
 * EventTarget memory leak detected", printed by every demo). */
function quietListeners(signal: AbortSignal): void {
  setMaxListeners(0, signal);
}

/** Sleeps until performance.now() ≥ at, or the signal aborts. */
async function sleepUntil(at: number, signal: AbortSignal): Promise<void> {
  // Timers have millisecond granularity and can fire up to ~1 ms early against performance.now(),
  // so re-check and sleep again rather than send a request before its due time.
  for (let delay = at - performance.now(); delay > 0 && !signal.aborted; delay = at - performance.now()) {
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      };
      // Capped at the longest delay a timer holds (a longer one fires at once); the loop sleeps again.
      const timer = setTimeout(done, Math.min(MAX_TIMER_MS, Math.max(1, delay)));
      signal.addEventListener("abort", done, { once: true });
    });
  }
}

interface Schedule {
  /** Resolves when every scheduled request has finished. */
  finished: Promise<void>;
  /** ms since start (the records' clock) when the last request finished (or now, while running). */
  elapsedMs(): number;
}

/** Sends `items` open-loop; the core shared by runReplay and startLoadGenerator. */
function runSchedule(
  items: AsyncIterable<ReplayItem> | Iterable<ReplayItem>,
  resolver: EntrypointResolver,
  options: ReplayCommonOptions,
  signal: AbortSignal,
  record: (r: ReplayRecord) => void,
): Schedule {
  const concurrency = options.concurrency ?? 64;
  const slots = new Slots(concurrency);
  const ownDispatcher = options.dispatcher ? undefined : new Agent({ connections: concurrency });
  const dispatcher = options.dispatcher ?? ownDispatcher;
  const maxPending = options.maxPending ?? 10_000;
  // The clock starts when the first request is ready, so opening the trace and warming up do not
  // count as lag against the schedule.
  let start = 0;
  let started = false;
  let endedAt: number | undefined;
  const inFlight = new Set<Promise<void>>();
  /** Each session's latest generator turn, until it has finished: the next turn waits for it. */
  const turns = new TurnChain<Promise<void>>();
  /** Turns waiting for their session's previous reply; they count against maxPending. */
  let holding = 0;

  const send = async (item: ReplayItem, previousTurn: Promise<void> | undefined): Promise<void> => {
    const due = start + item.atMs;
    const calledAt = performance.now();
    const base = {
      index: item.index,
      region: item.region,
      sessionId: item.sessionId,
      ...(item.turn !== undefined ? { turn: item.turn } : {}),
      scheduledMs: item.atMs,
      inputTokens: item.inputTokens,
      maxTokens: item.maxTokens,
    };
    if (slots.waiting + holding >= maxPending) {
      record({
        ...base,
        scheduleLagMs: Math.max(0, calledAt - due),
        ...(previousTurn !== undefined ? { turnWaitMs: 0 } : {}),
        queueWaitMs: 0,
        startMs: calledAt - start,
        status: 0,
        ok: false,
        error: "client queue full",
        contentDeltas: 0,
        outputTokens: 0,
      });
      return;
    }
    let turnWaitMs: { turnWaitMs: number } | undefined;
    if (previousTurn !== undefined) {
      holding++;
      await previousTurn;
      holding--;
      turnWaitMs = { turnWaitMs: performance.now() - calledAt };
    }
    const readyAt = performance.now();
    await slots.acquire();
    const sentAt = performance.now();
    try {
      const timing = { scheduleLagMs: Math.max(0, calledAt - due), ...turnWaitMs, queueWaitMs: sentAt - readyAt, startMs: sentAt - start };
      const entrypoint = resolver.get(item.region);
      if (signal.aborted || entrypoint === undefined) {
        if (!signal.aborted) resolver.invalidate();
        const error = signal.aborted ? "aborted" : `no entrypoint for region ${item.region}`;
        record({ ...base, ...timing, status: 0, ok: false, error, contentDeltas: 0, outputTokens: 0 });
        return;
      }
      const headers: Record<string, string> = { "x-meridian-client-region": item.region };
      if (options.sendSessionId ?? true) headers["x-session-id"] = item.sessionId;
      if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
      const result = await streamChat({
        url: chatCompletionsUrl(entrypoint),
        model: options.model ?? DEFAULT_REPLAY_MODEL,
        messages: item.messages,
        maxTokens: item.maxTokens,
        headers,
        ignoreEos: options.ignoreEos ?? false,
        signal,
        timeoutMs: options.requestTimeoutMs ?? 300_000,
        ...(dispatcher ? { dispatcher } : {}),
      });
      // A refused connection may mean the entrypoint moved (failover): look again soon.
      if (result.status === 0 && result.error !== "aborted") resolver.invalidate();
      record({ ...base, ...timing, entrypoint, ...result });
    } finally {
      slots.release();
    }
  };

  const finished = (async () => {
    let scheduled = 0;
    let unexpected: unknown;
    try {
      for await (const item of items) {
        if (!started) {
          start = performance.now();
          started = true;
        }
        if (signal.aborted) break;
        if (options.maxRequests !== undefined && scheduled >= options.maxRequests) break;
        if (options.durationMs !== undefined && item.atMs >= options.durationMs) break;
        await sleepUntil(start + item.atMs, signal);
        if (signal.aborted) break;
        scheduled++;
        // send() records every request outcome itself; anything thrown here is a bug or a
        // throwing onRecord, which must not be lost: the run fails with it at the end.
        const previous = turns.previous(item);
        const previousTurn = previous === null ? Promise.resolve() : previous;
        const task = send(item, previousTurn).catch((error: unknown) => {
          unexpected ??= error;
        });
        inFlight.add(task);
        turns.sent(item, task);
        void task.finally(() => {
          inFlight.delete(task);
          turns.ended(item, task);
        });
      }
    } finally {
      await Promise.all(inFlight);
      endedAt = performance.now();
      await ownDispatcher?.close();
    }
    if (unexpected !== undefined) throw unexpected;
  })();

  return { finished, elapsedMs: () => (started ? (endedAt ?? performance.now()) - start : 0) };
}

const DEFAULT_REQUEST_LIMIT = 100_000;

function defaultWeights(resolver: EntrypointResolver): RegionWeights {
  const regions = resolver.regions();
  if (regions.length === 0) throw new Error("the entrypoint map has no regions");
  return equalWeights(regions);
}

/** A resolver for the options' map; it and this check every delay the options give against the timer limit. */
function resolverFor(options: ReplayCommonOptions): EntrypointResolver {
  if (options.requestTimeoutMs !== undefined) assertTimerMs("requestTimeoutMs", options.requestTimeoutMs);
  return createEntrypointResolver({
    source: options.entrypoints,
    ...(options.entrypointsToken ? { token: options.entrypointsToken } : {}),
    ...(options.refreshMs !== undefined ? { refreshMs: options.refreshMs } : {}),
  });
}

/**
 * Replays a trace (or a bounded multi-turn workload) against the entrypoints and returns the
 * summary. Bounded: it ends with the trace, at durationMs, or after maxRequests; a generator run
 * without a bound stops after 100 000 requests.
 */
export async function runReplay(options: RunReplayOptions): Promise<ReplaySummary> {
  const outputs = await openOutputs(options.outPath, options.summaryPath);
  let resolver: EntrypointResolver;
  try {
    resolver = resolverFor(options);
  } catch (error) {
    await outputs.close();
    throw error;
  }
  const controller = new AbortController();
  quietListeners(controller.signal);
  const onAbort = (): void => controller.abort();
  // A signal already aborted fires no "abort" event: without the check the whole trace was sent.
  if (options.signal?.aborted) controller.abort();
  else options.signal?.addEventListener("abort", onAbort, { once: true });
  const records: ReplayRecord[] = [];
  const skipped: Skipped = { tooLong: 0, invalid: 0 };
  try {
    await resolver.ready();
    let items: AsyncIterable<ReplayItem> | Iterable<ReplayItem>;
    if (options.trace !== undefined) {
      items = traceItems(options.trace, options, options.regionWeights ?? defaultWeights(resolver), skipped);
    } else {
      const generator: MultiTurnOptions = { ...options.generator };
      generator.regions ??= defaultWeights(resolver);
      if (generator.maxRequests === undefined && generator.durationMs === undefined && options.maxRequests === undefined && options.durationMs === undefined) {
        generator.maxRequests = DEFAULT_REQUEST_LIMIT;
      }
      items = generatorItems(generator, options.timeScale ?? 1, options.maxOutputTokens);
    }
    const schedule = runSchedule(items, resolver, options, controller.signal, (record) => {
      records.push(record);
      outputs.record(record);
      options.onRecord?.(record);
    });
    await schedule.finished;
    const summary = summarise(records, { toMs: schedule.elapsedMs() }, skipped.tooLong, skipped.invalid);
    await outputs.finish(summary);
    return summary;
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
    resolver.close();
    await outputs.close();
  }
}

export interface LoadGeneratorOptions extends ReplayCommonOptions {
  /** Multi-turn workload; its regions default to equal weights over the entrypoint map. */
  generator?: MultiTurnOptions;
  /** Records kept for summary() (the most recent; default 5000). */
  keepRecords?: number;
}

export interface LoadGenerator {
  /** Summary over the most recent keepRecords requests. */
  summary(): ReplaySummary;
  /** Stops scheduling, aborts requests in flight, and resolves with the final summary. */
  stop(): Promise<ReplaySummary>;
  /** Resolves when the generator ends by itself (maxRequests / durationMs) or is stopped. */
  readonly done: Promise<ReplaySummary>;
}

/**
 * Runs the multi-turn generator against the entrypoints until stop(): the demo fleet's steady
 * client traffic. Waits for the entrypoint map to become available and non-empty (retrying every
 * refreshMs). Region weights default to equal over the map's regions when traffic starts; a region
 * added to the map later gets traffic only if it was named in `generator.regions`.
 */
export function startLoadGenerator(options: LoadGeneratorOptions): LoadGenerator {
  const controller = new AbortController();
  quietListeners(controller.signal);
  const resolver = resolverFor(options);
  const keep = options.keepRecords ?? 5000;
  let records: ReplayRecord[] = [];
  let schedule: Schedule | undefined;
  const startedAt = performance.now();

  // Exactly the most recent `keep` (storage is trimmed in batches, so it may hold up to twice as
  // many); throughput is over the span they cover, not the whole (possibly long) run. It starts at
  // the send of the oldest of them (they are in completion order), not at the earliest send among
  // them: one slow request finishing inside the window would stretch it back to its own send.
  const summary = (): ReplaySummary => {
    const recent = records.length > keep ? records.slice(-keep) : records;
    return summarise(recent, { toMs: schedule?.elapsedMs() ?? performance.now() - startedAt, fromMs: recent[0]?.startMs ?? 0 });
  };

  // The console may not be up yet, or may serve an empty map before any LB is registered: wait
  // (re-fetching every refreshMs) until there is a region to send to.
  const waitForMap = async (): Promise<boolean> => {
    for (;;) {
      try {
        await resolver.refresh();
        if (options.generator?.regions !== undefined || resolver.regions().length > 0) return true;
      } catch {
        // not reachable yet; try again
      }
      await sleepUntil(performance.now() + (options.refreshMs ?? 5000), controller.signal);
      if (controller.signal.aborted) return false;
    }
  };

  const done = (async (): Promise<ReplaySummary> => {
    try {
      if (!(await waitForMap())) return summary();
      const generator: MultiTurnOptions = { ...options.generator };
      generator.regions ??= defaultWeights(resolver);
      schedule = runSchedule(generatorItems(generator, 1, options.maxOutputTokens), resolver, options, controller.signal, (record) => {
        records.push(record);
        // Trim in batches so the cost of dropping old records stays amortised.
        if (records.length > keep * 2) records = records.slice(-keep);
        options.onRecord?.(record);
      });
      await schedule.finished;
      if (records.length > keep) records = records.slice(-keep);
      return summary();
    } finally {
      resolver.close();
    }
  })();
  if (options.signal?.aborted) controller.abort();
  else options.signal?.addEventListener("abort", () => controller.abort(), { once: true });

  return {
    summary,
    stop: () => {
      controller.abort();
      return done;
    },
    done,
  };
}
