// The active load Dynamo's KV router books inside the router, per worker (see dynamo-kv.ts for the
// source): prompt tokens still to prefill, and the unique prompt blocks of the requests that are live.
//
// A request is added at dispatch with its prefill tokens (the prompt minus what the router expected
// the worker to hold) and its prompt's block keys. Its prefill tokens are released at its first
// token; its blocks at completion. A worker's blocks are counted once however many live requests
// share them (Dynamo deduplicates by sequence hash), so the incoming request adds only the blocks
// past the prefix its worker's live requests already hold. Keys are chained, so that prefix is found
// by binary search: a worker holding key k holds every key before it.
//
// Bounded: at most `maxRequests` live requests are tracked; past that the oldest is freed, which
// only happens if the caller lost "complete" events. Memory is then at most maxRequests prompts.

import type { BlockKey } from "../types";

interface TrackedRequest {
  workerId: string;
  worker: WorkerLoad;
  keys: readonly BlockKey[];
  prefillTokens: number;
}

interface WorkerLoad {
  /** Block key → live requests holding it. */
  blocks: Map<BlockKey, number>;
  prefillTokens: number;
  requests: number;
}

export interface ActiveLoad {
  activePrefillTokens: number;
  activeBlocks: number;
  activeRequests: number;
}

const IDLE: ActiveLoad = Object.freeze({ activePrefillTokens: 0, activeBlocks: 0, activeRequests: 0 });

export class ActiveSequences {
  private readonly workers = new Map<string, WorkerLoad>();
  private readonly requests = new Map<string, TrackedRequest>();

  constructor(private readonly maxRequests: number) {}

  get trackedRequests(): number {
    return this.requests.size;
  }

  load(workerId: string): ActiveLoad {
    const w = this.workers.get(workerId);
    if (w === undefined) return IDLE;
    return { activePrefillTokens: w.prefillTokens, activeBlocks: w.blocks.size, activeRequests: w.requests };
  }

  /** How many leading keys of `keys` the worker's live requests already hold. */
  sharedPrefix(workerId: string, keys: readonly BlockKey[]): number {
    const w = this.workers.get(workerId);
    if (w === undefined || keys.length === 0 || !w.blocks.has(keys[0] as BlockKey)) return 0;
    let lo = 0; // keys[lo] is held
    let hi = keys.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (w.blocks.has(keys[mid] as BlockKey)) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  }

  add(requestId: string, workerId: string, keys: readonly BlockKey[], prefillTokens: number): void {
    this.free(requestId); // a re-dispatched id replaces its earlier booking
    let w = this.workers.get(workerId);
    if (w === undefined) {
      w = { blocks: new Map(), prefillTokens: 0, requests: 0 };
      this.workers.set(workerId, w);
    }
    for (const k of keys) w.blocks.set(k, (w.blocks.get(k) ?? 0) + 1);
    w.prefillTokens += prefillTokens;
    w.requests++;
    this.requests.set(requestId, { workerId, worker: w, keys, prefillTokens });
    if (this.requests.size > this.maxRequests) this.free(this.requests.keys().next().value as string);
  }

  /** The worker left (or now names another engine): its book goes, and its live requests with it, so
   * their later events change nothing (a new book under the same id starts empty). */
  removeWorker(workerId: string): void {
    this.workers.delete(workerId);
    for (const [requestId, r] of this.requests) if (r.workerId === workerId) this.requests.delete(requestId);
  }

  markPrefillCompleted(requestId: string): void {
    const r = this.requests.get(requestId);
    if (r === undefined || r.prefillTokens === 0) return;
    r.worker.prefillTokens -= r.prefillTokens;
    r.prefillTokens = 0;
  }

  free(requestId: string): void {
    const r = this.requests.get(requestId);
    if (r === undefined) return;
    this.requests.delete(requestId);
    const w = r.worker;
    if (w.requests === 1) {
      // Its last live request: drop the worker's book instead of decrementing it to empty.
      this.workers.delete(r.workerId);
      return;
    }
    w.prefillTokens -= r.prefillTokens;
    w.requests--;
    for (const k of r.keys) {
      const n = (w.blocks.get(k) ?? 1) - 1;
      if (n <= 0) w.blocks.delete(k);
      else w.blocks.set(k, n);
    }
  }
}
