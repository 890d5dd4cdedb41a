// What the proxy does when a request ends: read the outcome off the upstream exchange (usage, reply
// text and tool calls, first content time), hand it to the LB core, and emit what the core returns
// (metrics, the telemetry event, the next-turn learning, deferred off the response path). The
// bookkeeping rules themselves are the core's (packages/lb-core/src/completion.ts).
import type { LbCore, LearnInstruction, Outcome } from "@meridian/lb-core";
import type { AssistantToolCall } from "@meridian/routing";
import { coreNow } from "./core-clock";
import type { ProxyMetrics } from "./metrics";
import { type CompletionBody, readCompletionBody, type UsageReport } from "./sse";
import type { TelemetryLog } from "./telemetry";
import type { UpstreamExchange, ExchangeJob } from "./upstream";
import type { Ticket } from "@meridian/lb-core";

/** What a finished upstream response says, as the core's Outcome wants it (status and timing aside). */
export interface ResponseFacts {
  usage: UsageReport | null;
  reply: string;
  /** The reply's tool calls as the next turn sends them back (empty when none or unknown). */
  toolCalls: readonly AssistantToolCall[];
  outputEvents: number;
  /** performance.now() of the first generated token (text, reasoning or a tool call). */
  firstContentAt: number | null;
}

/** Usage, reply and first-token time of a finished exchange: from the SSE observer on a stream,
 * from the JSON body otherwise (whose first byte is its first content, also for an embedding). A body
 * too large to hold was passed through unread: it reports no usage and no reply, and is accounted as
 * the answer of an engine that reports none. */
export function responseFacts(exchange: UpstreamExchange<ExchangeJob>): ResponseFacts {
  const observer = exchange.observer;
  if (observer) {
    // A reply cut at the observer's bound is unknown: learning its start as the next turn would be
    // wrong. So is one whose tool calls the LB could not put together.
    const toolCalls = observer.replyTruncated ? null : observer.replyToolCalls();
    const reply = toolCalls === null ? "" : observer.content;
    return { usage: observer.usage, reply, toolCalls: toolCalls ?? [], outputEvents: observer.contentEvents, firstContentAt: exchange.firstContentAt };
  }
  const parsed: CompletionBody =
    exchange.ok && !exchange.bodyPassedThrough
      ? readCompletionBody(Buffer.concat(exchange.buffered).toString("utf8"))
      : { content: "", toolCalls: [], usage: null, output: false };
  // Any generated output (text, reasoning, a tool call) came with the first byte. An embedding is a
  // prefill whose whole answer is its first output: its TTFT is the first byte too.
  const answered = parsed.output || (exchange.ok && exchange.job.request.kind === "embedding");
  const firstContentAt = answered && exchange.firstByteAt !== null ? exchange.firstByteAt : exchange.firstContentAt;
  return { usage: parsed.usage, reply: parsed.content, toolCalls: parsed.toolCalls, outputEvents: 0, firstContentAt };
}

/** The status and error an ended exchange is recorded with. A stream the upstream ended with its error
 * event (a peer whose replica died mid-stream) failed, though its head said 200: the client saw the
 * error, so it is not counted, timed or learned from as a success. */
export function endedStatus(exchange: UpstreamExchange<ExchangeJob>): { status: number; error: string | null } {
  const streamError = exchange.observer?.streamError ?? null;
  if (streamError !== null) {
    return { status: 502, error: `upstream ${exchange.target.kind} ${exchange.target.id} ended the stream with an error: ${streamError}` };
  }
  return { status: exchange.status, error: exchange.ok ? null : `upstream status ${exchange.status}` };
}

export interface CompletionSinks {
  core: LbCore<unknown>;
  metrics: ProxyMetrics;
  telemetry: TelemetryLog;
  /** Applies a learning instruction a tick later: indexing an 80 KB prompt must not stand between
   * the engine's first token and the client. */
  learnLater(instruction: LearnInstruction): void;
}

/** Hands a finished request to the core and emits the results. `arrival` is performance.now() at arrival. */
export function recordCompletion(
  sinks: CompletionSinks,
  ticket: Ticket<unknown>,
  arrival: number,
  status: number,
  facts: ResponseFacts | null,
  error: string | null,
): void {
  const e2eMs = performance.now() - arrival;
  const outcome: Outcome = {
    status,
    error,
    usage: facts?.usage ?? null,
    reply: facts?.reply ?? "",
    toolCalls: facts?.toolCalls ?? [],
    outputEvents: facts?.outputEvents ?? 0,
    ttftMs: facts?.firstContentAt != null ? facts.firstContentAt - arrival : null,
    e2eMs,
  };
  const completion = sinks.core.complete(ticket, outcome, coreNow());
  const { metrics } = sinks;
  metrics.requests.inc({ policy: ticket.policy, replica: completion.targetLabel, status: String(status) });
  if (status >= 200 && status < 300) {
    metrics.e2e.observe({ replica: completion.targetLabel }, e2eMs / 1000);
    if (outcome.ttftMs !== null) metrics.ttft.observe({ replica: completion.targetLabel }, outcome.ttftMs / 1000);
  }
  if (completion.prediction) metrics.observePrediction(completion.prediction.predicted, completion.prediction.actual);
  // A run of zero-cached reports where the index expected hits: the engine's cache was emptied.
  if (completion.cacheReport?.cleared) metrics.cache.cleared(completion.targetLabel, "cache-lost");
  sinks.telemetry.append(completion.telemetry());
  if (completion.learn) sinks.learnLater(completion.learn);
}
