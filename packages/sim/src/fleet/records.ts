// What a simulator run keeps of each request once its client has the answer: a RequestRecord for a
// served request (client-side TTFT and E2E, the serving LB's prediction, the engine's truth), a count
// by refusal code for a refused one, and the progress callback.
import type { Completion } from "@meridian/lb-core";
import type { Flight } from "./flight";
import type { FleetRunOptions } from "./run-options";
import type { RefusedRecord, RequestRecord } from "./summary";

export class RunRecords {
  /** Requests whose client has its answer (served or refused). */
  settled = 0;
  readonly served: RequestRecord[] = [];
  readonly refused: RefusedRecord[] = [];
  private readonly progressEvery: number;

  constructor(
    private readonly total: number,
    private readonly options: Pick<FleetRunOptions, "onProgress">,
  ) {
    this.progressEvery = Math.max(1, Math.floor(total / 200));
  }

  /** The entry LB answered the client at `now`; the answer reaches the client `clientHalfMs` later. */
  answered(f: Flight, completion: Completion, now: number, clientHalfMs: number): void {
    const { status } = completion.outcome;
    if (status >= 200 && status < 300) this.served.push(record(f, completion, now, clientHalfMs));
    else {
      // The entry LB's own refusal, or what the peer it forwarded to answered.
      const code = f.entry?.refusal?.code ?? `upstream_${status}`;
      const { req } = f;
      this.refused.push({
        id: req.id,
        trace_index: req.traceIndex,
        arrival_ms: f.sentMs,
        ...turnWait(f),
        client_region: req.clientRegion,
        lb: f.entry?.lb.id ?? "",
        input_tokens: req.inputTokens,
        output_tokens: req.outputTokens,
        status,
        code,
      });
    }
    this.settled++;
    const onProgress = this.options.onProgress;
    if (onProgress && (this.settled % this.progressEvery === 0 || this.settled === this.total)) onProgress(this.settled, this.total);
  }
}

/** A generator turn's hold for its previous answer (0 when that came before the turn was due); nothing for other requests. */
function turnWait(f: Flight): { turn_wait_ms?: number } {
  return f.req.afterId === undefined ? {} : { turn_wait_ms: f.sentMs - f.req.arrivalMs };
}

function record(f: Flight, completion: Completion, now: number, clientHalfMs: number): RequestRecord {
  const { req } = f;
  const serving = f.serving!;
  const replica = f.replica!;
  const target = serving.ticket.target;
  return {
    id: req.id,
    trace_index: req.traceIndex,
    arrival_ms: f.sentMs,
    ...turnWait(f),
    client_region: req.clientRegion,
    lb: serving.lb.id,
    forwarded: serving.ticket.hop > 0,
    replica: replica.id,
    replica_region: replica.region,
    input_tokens: req.inputTokens,
    output_tokens: req.outputTokens,
    predicted_cached_tokens: target?.predictedCachedTokens ?? 0,
    cached_tokens: f.cachedTokens,
    // Client-measured: client → LB (→ peer LB) → replica and back, as the paper measured.
    ttft_ms: f.entryFirstMs + clientHalfMs - f.sentMs,
    e2e_ms: now + clientHalfMs - f.sentMs,
    itl_ms: f.itlMs,
    lb_ttft_ms: completion.outcome.ttftMs ?? Number.NaN,
    config_version: serving.ticket.configVersion,
    weights: serving.ticket.weights,
    reason: target?.reason ?? null,
  };
}
