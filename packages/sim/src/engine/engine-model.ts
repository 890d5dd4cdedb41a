// A discrete-event model of an SGLang/vLLM-like engine with continuous batching, chunked prefill and a
// prefix cache. It owns no clock: the fleet simulator drives it on a virtual clock and the HTTP server
// on real timers, through the same submit / cancel / nextEventTime / advance calls.
//
// The engine runs in steps (iterations). At each step boundary it admits waiting requests (FIFO, while
// a slot is free and their prompt + output fit in the KV capacity), then plans one step: every decoding
// request gets one token, and up to `prefillChunkTokens` prompt tokens of the admitted requests are
// prefilled in FIFO order. A step takes
//     itlBaseMs + itlPerSeqMs·decoding + itlPerKTokMs·kvInUse/1000 + prefillTokens/prefillTokensPerSec
// so decode ITL grows with batch size and KV in use, and prefill chunks stretch the steps they share.
// A request's first token comes at the end of the step that finishes its prefill.
//
// KV exhaustion: requests WAIT, there is no preemption. Admission reserves prompt + output tokens, so
// an admitted request can always finish. A request larger than the whole KV is admitted alone when the
// engine is empty, so nothing can wait forever.
//
// Prefix cache: at admission the engine matches the longest prefix of the request's block keys; the
// cached tokens skip prefill. At least one token is always computed (an engine needs the logits of the
// last prompt token), so a full hit still costs one token of prefill. The prompt's blocks enter the
// cache when its prefill completes (they exist in KV from then on; requests sharing the prefix can hit
// them while this one decodes), and prompt + reply blocks (`completionBlockKeys`) at completion.
//
// Performance: runs of decode-only steps between two completions are skipped in O(1) with a closed
// form (the step time grows linearly as each step adds one KV token per decoding request), so the
// simulator pays per completion and per prefill chunk, not per token. Per-token events exist only
// with `emitTokenEvents`, which also turns the skipping off.
import type { BlockKey } from "@meridian/routing";
import type { EngineEvent, EngineLoad, EngineRequest, StepListener } from "./engine-types";
import { Fifo } from "./fifo";
import { MinHeap } from "./min-heap";
import { validateEngineParams, type EngineParams } from "./params";
import { PrefixCache } from "./prefix-cache";

type Phase = "waiting" | "prefill" | "decode" | "finished" | "cancelled";

interface RequestState {
  readonly request: EngineRequest;
  readonly seq: number;
  readonly submitTime: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  phase: Phase;
  cachedTokens: number;
  /** Prompt tokens to compute (input minus the cached tokens, at least 1). */
  prefillTarget: number;
  prefilled: number;
  /** KV tokens held while prefilling: the whole prompt, allocated at admission. */
  prefillKv: number;
  firstTokenTime: number;
  /** Value of the engine's decode-step counter when this request started decoding. */
  decodeStart: number;
  /** Value of the decode-step counter at which this request has generated all its tokens. */
  decodeEnd: number;
}

export class EngineModel {
  readonly params: Readonly<EngineParams>;
  private readonly cache: PrefixCache;
  private readonly byId = new Map<string, RequestState>();
  private readonly waitingQueue = new Fifo<RequestState>();
  private readonly prefillQueue = new Fifo<RequestState>();
  private readonly decodingSet = new Set<RequestState>();
  private readonly doneHeap = new MinHeap<RequestState>((a, b) => (a.decodeEnd !== b.decodeEnd ? a.decodeEnd < b.decodeEnd : a.seq < b.seq));
  private pendingEvents: EngineEvent[] = [];
  private stepListener: StepListener | null = null;

  private clock = Number.NEGATIVE_INFINITY;
  private seq = 0;

  // Admitted-request accounting.
  private waitingCount = 0;
  private prefillingCount = 0;
  private reservedTokens = 0;
  private prefillKvTokens = 0;
  // Decoding request i holds inputTokens_i + 1 + (decodeSteps − decodeStart_i) KV tokens, so the sum over
  // the batch is decodeKvBase + decodingCount · decodeSteps, maintained in O(1) per join/leave.
  private decodeSteps = 0;
  private decodeKvBase = 0;
  private decodeStartSum = 0;

  // The step in progress.
  private busy = false;
  private stepEnd = 0;
  /** Duration of the step in progress, and how much each following decode-only step adds to it. */
  private stepDuration = 0;
  private stepSlope = 0;
  private stepDecoders = 0;
  private stepPrefillTokens = 0;
  /** Set when a submit or cancel changed the batch after the step was planned. */
  private stepStale = false;
  /** The prefill chunk of the step in progress: which requests get how many tokens. */
  private readonly allocRequests: RequestState[] = [];
  private readonly allocTokens: number[] = [];

  // Counters.
  private promptTokensTotal = 0;
  private cachedTokensTotal = 0;
  private generatedByFinished = 0;
  private requestsFinished = 0;
  private requestsCancelled = 0;

  constructor(
    readonly id: string,
    params: EngineParams,
  ) {
    validateEngineParams(params);
    this.params = Object.freeze({ ...params });
    this.cache = new PrefixCache(params.prefixCacheBlocks);
  }

  /** Queues a request at `now`. It is admitted at the next step boundary (at once when idle). */
  submit(request: EngineRequest, now: number): void {
    if (this.byId.has(request.id)) throw new Error(`engine ${this.id}: duplicate request id ${request.id}`);
    this.advanceInto(now, this.pendingEvents);
    const state: RequestState = {
      request,
      seq: this.seq++,
      submitTime: this.clock,
      inputTokens: Math.max(1, Math.round(request.inputTokens)),
      outputTokens: Math.min(this.params.maxOutputTokens, Math.max(1, Math.round(request.maxOutputTokens))),
      phase: "waiting",
      cachedTokens: 0,
      prefillTarget: 0,
      prefilled: 0,
      prefillKv: 0,
      firstTokenTime: 0,
      decodeStart: 0,
      decodeEnd: 0,
    };
    this.byId.set(request.id, state);
    this.waitingQueue.push(state);
    this.waitingCount++;
    if (this.busy) this.stepStale = true;
    else this.startStep(this.clock);
  }

  /** Drops a request (client abort): it frees its slot and KV at once. Unknown or finished ids are ignored. */
  cancel(id: string, now: number): void {
    this.advanceInto(now, this.pendingEvents);
    const state = this.byId.get(id);
    if (state === undefined) return;
    this.byId.delete(id);
    switch (state.phase) {
      case "waiting":
        this.waitingCount--;
        break;
      case "prefill":
        this.prefillingCount--;
        this.prefillKvTokens -= state.prefillKv;
        this.reservedTokens -= state.inputTokens + state.outputTokens;
        break;
      case "decode":
        this.generatedByFinished += 1 + this.decodeSteps - state.decodeStart;
        this.leaveDecoding(state);
        this.reservedTokens -= state.inputTokens + state.outputTokens;
        break;
      default:
        return;
    }
    state.phase = "cancelled";
    this.requestsCancelled++;
    if (this.busy) this.stepStale = true;
  }

  /** When the next event may happen (a step boundary; advance() may then return nothing). Infinity when idle. */
  nextEventTime(): number {
    if (!this.busy) return Number.POSITIVE_INFINITY;
    if (!this.canSkipDecodeSteps()) return this.stepEnd;
    const next = this.peekDecoding();
    if (next === undefined) return this.stepEnd;
    return this.endOfStep(next.decodeEnd - this.decodeSteps);
  }

  /** Runs the engine up to `now` and returns the events that happened, in time order. */
  advance(now: number): EngineEvent[] {
    const events = this.pendingEvents;
    this.pendingEvents = [];
    this.advanceInto(now, events);
    return events;
  }

  load(): EngineLoad {
    const used = this.usedTokens();
    const decoding = this.decodingSet.size;
    return {
      running: this.prefillingCount + decoding,
      waiting: this.waitingCount,
      usedTokens: used,
      kvCapacityTokens: this.params.kvCapacityTokens,
      tokenUsage: used / this.params.kvCapacityTokens,
      cacheHitRate: this.promptTokensTotal === 0 ? 0 : this.cachedTokensTotal / this.promptTokensTotal,
      admittedConcurrency: this.params.maxRunning,
      prefilling: this.prefillingCount,
      decoding,
      cachedBlocks: this.cache.size,
      prefixCacheBlocks: this.params.prefixCacheBlocks,
      promptTokensTotal: this.promptTokensTotal,
      cachedTokensTotal: this.cachedTokensTotal,
      generationTokensTotal: this.generatedByFinished + decoding * (1 + this.decodeSteps) - this.decodeStartSum,
      requestsFinished: this.requestsFinished,
      requestsCancelled: this.requestsCancelled,
      preemptionsTotal: 0,
    };
  }

  /** Empties the prefix cache (SGLang /flush_cache). Running requests keep their KV. */
  flushCache(): void {
    this.cache.clear();
  }

  /** Blocks of `keys` the prefix cache would serve now (a longest-prefix match, no LRU update). */
  cachedPrefixBlocks(keys: readonly BlockKey[]): number {
    return this.cache.matchPrefix(keys);
  }

  /** Observes every engine step (e.g. for vLLM's iteration_tokens_total histogram). */
  onSteps(listener: StepListener | null): void {
    this.stepListener = listener;
  }

  // ---- stepping ----------------------------------------------------------------------------------

  private advanceInto(now: number, events: EngineEvent[]): void {
    if (now > this.clock) this.clock = now;
    const until = this.clock;
    while (this.busy) {
      if (this.canSkipDecodeSteps()) this.skipDecodeSteps(until);
      if (this.stepEnd > until) break;
      this.completeStep(events);
      this.startStep(this.stepEnd);
    }
  }

  private usedTokens(): number {
    return this.prefillKvTokens + this.decodeKvBase + this.decodingSet.size * this.decodeSteps;
  }

  /** Admits what fits, plans the next step from `time`, or goes idle when there is nothing to run. */
  private startStep(time: number): void {
    this.admit();
    let budget = this.params.prefillChunkTokens;
    let prefillTokens = 0;
    this.allocRequests.length = 0;
    this.allocTokens.length = 0;
    for (let offset = 0; budget > 0; offset++) {
      const state = this.prefillQueue.at(offset);
      if (state === undefined) break;
      if (state.phase !== "prefill") continue;
      const take = Math.min(budget, state.prefillTarget - state.prefilled);
      this.allocRequests.push(state);
      this.allocTokens.push(take);
      budget -= take;
      prefillTokens += take;
    }
    const decoders = this.decodingSet.size;
    this.stepStale = false;
    if (decoders === 0 && prefillTokens === 0) {
      this.busy = false;
      return;
    }
    const p = this.params;
    this.busy = true;
    this.stepDecoders = decoders;
    this.stepPrefillTokens = prefillTokens;
    this.stepDuration = p.itlBaseMs + p.itlPerSeqMs * decoders + (p.itlPerKTokMs * this.usedTokens()) / 1000 + (prefillTokens * 1000) / p.prefillTokensPerSec;
    this.stepSlope = (p.itlPerKTokMs * decoders) / 1000;
    this.stepEnd = time + this.stepDuration;
  }

  private admit(): void {
    const p = this.params;
    for (;;) {
      const state = this.waitingQueue.peek();
      if (state === undefined) return;
      if (state.phase !== "waiting") {
        this.waitingQueue.shift();
        continue;
      }
      const running = this.prefillingCount + this.decodingSet.size;
      if (running >= p.maxRunning) return;
      const reserve = state.inputTokens + state.outputTokens;
      if (running > 0 && this.reservedTokens + reserve > p.kvCapacityTokens) return;
      this.waitingQueue.shift();
      this.waitingCount--;
      this.reservedTokens += reserve;

      const keys = state.request.blockKeys;
      const matched = this.cache.matchPrefix(keys);
      if (matched > 0) this.cache.touchChain(matched === keys.length ? keys : keys.slice(0, matched));
      state.cachedTokens = Math.min(matched * p.blockTokens, state.inputTokens);
      const reused = Math.min(state.cachedTokens, state.inputTokens - 1);
      state.prefillTarget = state.inputTokens - reused;
      state.prefillKv = state.inputTokens;
      this.prefillKvTokens += state.inputTokens;
      this.promptTokensTotal += state.inputTokens;
      this.cachedTokensTotal += state.cachedTokens;
      state.phase = "prefill";
      this.prefillingCount++;
      this.prefillQueue.push(state);
    }
  }

  private completeStep(events: EngineEvent[]): void {
    const time = this.stepEnd;
    this.decodeSteps++;
    this.stepListener?.(this.stepDecoders + this.stepPrefillTokens, 1);

    if (this.params.emitTokenEvents) {
      for (const state of this.decodingSet) events.push({ type: "tokens", id: state.request.id, time, count: 1 });
    }
    for (let next = this.peekDecoding(); next !== undefined && next.decodeEnd <= this.decodeSteps; next = this.peekDecoding()) {
      this.doneHeap.pop();
      this.leaveDecoding(next);
      this.finish(next, time, events);
    }
    for (let i = 0; i < this.allocRequests.length; i++) {
      const state = this.allocRequests[i]!;
      if (state.phase !== "prefill") continue;
      const tokens = this.allocTokens[i]!;
      state.prefilled += tokens;
      if (state.prefilled >= state.prefillTarget) this.firstToken(state, time, events);
    }
    // Drop finished prefills from the queue head so the next plan starts at live work.
    for (let head = this.prefillQueue.peek(); head !== undefined && head.phase !== "prefill"; head = this.prefillQueue.peek()) {
      this.prefillQueue.shift();
    }
    this.allocRequests.length = 0;
    this.allocTokens.length = 0;
  }

  private firstToken(state: RequestState, time: number, events: EngineEvent[]): void {
    this.prefillingCount--;
    this.prefillKvTokens -= state.prefillKv;
    state.firstTokenTime = time;
    this.cache.touchChain(state.request.blockKeys);
    events.push({
      type: "first-token",
      id: state.request.id,
      time,
      cachedTokens: state.cachedTokens,
      promptTokens: state.inputTokens,
    });
    if (state.outputTokens === 1) {
      this.finish(state, time, events);
      return;
    }
    state.phase = "decode";
    state.decodeStart = this.decodeSteps;
    state.decodeEnd = this.decodeSteps + state.outputTokens - 1;
    this.decodeKvBase += state.inputTokens + 1 - state.decodeStart;
    this.decodeStartSum += state.decodeStart;
    this.decodingSet.add(state);
    this.doneHeap.push(state);
  }

  private leaveDecoding(state: RequestState): void {
    this.decodeKvBase -= state.inputTokens + 1 - state.decodeStart;
    this.decodeStartSum -= state.decodeStart;
    this.decodingSet.delete(state);
  }

  private finish(state: RequestState, time: number, events: EngineEvent[]): void {
    state.phase = "finished";
    this.byId.delete(state.request.id);
    this.reservedTokens -= state.inputTokens + state.outputTokens;
    this.generatedByFinished += state.outputTokens;
    this.requestsFinished++;
    this.cache.touchChain(state.request.completionBlockKeys ?? state.request.blockKeys);
    events.push({
      type: "done",
      id: state.request.id,
      time,
      outputTokens: state.outputTokens,
      cachedTokens: state.cachedTokens,
      promptTokens: state.inputTokens,
      submitTime: state.submitTime,
      firstTokenTime: state.firstTokenTime,
      meanItlMs: state.outputTokens > 1 ? (time - state.firstTokenTime) / (state.outputTokens - 1) : 0,
    });
  }

  /** The decoding request that finishes first (cancelled entries are dropped lazily). */
  private peekDecoding(): RequestState | undefined {
    for (let top = this.doneHeap.peek(); top !== undefined; top = this.doneHeap.peek()) {
      if (top.phase === "decode") return top;
      this.doneHeap.pop();
    }
    return undefined;
  }

  // ---- skipping runs of decode-only steps ---------------------------------------------------------

  /** True when the steps from now to the next completion are all decode-only and change nothing else. */
  private canSkipDecodeSteps(): boolean {
    return this.busy && !this.params.emitTokenEvents && !this.stepStale && this.allocRequests.length === 0 && this.stepDecoders > 0;
  }

  /**
   * End time of the j-th step counting the one in progress as j = 1, if all are decode-only. Each step
   * adds one KV token per decoding request, so step j lasts stepDuration + stepSlope·(j − 1). Written so
   * that endOfStep(1) is exactly stepEnd, and nextEventTime() and advance() agree to the last bit.
   */
  private endOfStep(j: number): number {
    const extra = j - 1;
    return this.stepEnd + extra * this.stepDuration + (this.stepSlope * j * extra) / 2;
  }

  /** Completes, without events, the decode-only steps that end by `until` and precede the next completion. */
  private skipDecodeSteps(until: number): void {
    const next = this.peekDecoding();
    if (next === undefined) return;
    const stepsToDone = next.decodeEnd - this.decodeSteps; // >= 1: the step that ends with the completion
    const skip = Math.min(stepsToDone - 1, this.stepsEndingBy(until, stepsToDone));
    if (skip <= 0) return;
    const endOfCurrent = this.endOfStep(skip + 1);
    this.stepListener?.(this.stepDecoders, skip);
    this.decodeSteps += skip;
    this.stepEnd = endOfCurrent;
    this.stepDuration += this.stepSlope * skip;
  }

  /** How many steps, counting the one in progress, end by `until` (at most `cap`). */
  private stepsEndingBy(until: number, cap: number): number {
    if (this.stepEnd > until) return 0;
    if (until === Number.POSITIVE_INFINITY) return cap;
    const elapsed = until - this.stepEnd;
    const a = this.stepDuration;
    const b = this.stepSlope;
    // Solve stepEnd + x·a + b·x(x+1)/2 <= until for the largest integer x = j − 1.
    let x: number;
    if (b === 0) x = Math.floor(elapsed / a);
    else {
      const linear = a + b / 2;
      x = Math.floor((-linear + Math.sqrt(linear * linear + 2 * b * elapsed)) / b);
    }
    x = Math.min(Math.max(x, 0), cap);
    // Float rounding: settle on the exact boundary as endOfStep computes it.
    while (x > 0 && this.endOfStep(x + 1) > until) x--;
    while (x + 1 < cap && this.endOfStep(x + 2) <= until) x++;
    return Math.min(x + 1, cap);
  }
}
