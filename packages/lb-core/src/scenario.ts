// A scripted LB scenario: LBs in front of scripted engines, and a list of steps (an engine reports a
// load, a client sends a request, an engine answers one, time passes until a held request expires).
// The proxy runs it over real HTTP against scripted fake engines; the simulator runs it on its LB
// model in virtual time. Both record the LB cores' placement logs, which must be identical: that is
// the evidence that both run the same LB. The helpers below build what both sides send and answer,
// so the two runs see the same bytes and the same usage.
import {
  chatBlockKeys,
  chatSerialisedLength,
  type BlockKey,
  type ChatMessageLike,
  type CrossRegionMode,
  type PolicyName,
  type ReplicaStateName,
} from "@meridian/routing";
import type { Outcome, Usage } from "./completion";
import type { PlacementLogEntry } from "./placement";

export interface ScenarioReplica {
  id: string;
  region: string;
  /** Scripted probe round trip, ms (the fake engine delays GET /health by this much). */
  rttMs: number;
  /** Default SCENARIO_MODEL. */
  model?: string;
  state?: ReplicaStateName;
}

export interface ScenarioLb {
  id: string;
  region: string;
  /** The replicas in this LB's config. */
  replicas: ScenarioReplica[];
}

export interface ScenarioLimits {
  queueMaxLength: number;
  queueMaxWaitMs: number;
  peerQueueTau?: number;
}

/** What a step must make the LBs log, as "LB REQUEST OUTCOME [TARGET|CODE]", e.g. "lb-us r1 replica us-1",
 * "lb-us r3 hold", "lb-us r4 fail queue_full". The full entries of two runs are compared as well. */
export type ExpectedPlacement = string;

export type ScenarioStep =
  /** From now on the replica's engine reports this load on /metrics (every LB scrapes it). */
  | { load: string; running: number; waiting: number; expect?: ExpectedPlacement[] }
  /** A client sends request `send` (its session id) to LB `lb`. */
  | { send: string; lb: string; text: string; model?: string; expect: ExpectedPlacement[] }
  /** The engine holding request `finish` answers it: 200, SCENARIO_REPLY, scenarioUsage(). */
  | { finish: string; expect?: ExpectedPlacement[] }
  /** Time passes until the oldest held request's wait bound expires. */
  | { wait: "expiry"; expect: ExpectedPlacement[] };

export interface LbScenario {
  name: string;
  mode: CrossRegionMode;
  policy: PolicyName;
  seed: number;
  limits: ScenarioLimits;
  lbs: ScenarioLb[];
  steps: ScenarioStep[];
}

export const SCENARIO_MODEL = "scenario-model";
/** The reply every scripted engine gives: short, so it completes no block of its own. */
export const SCENARIO_REPLY = "ok";
/** Characters per token the scripted engines report in usage.prompt_tokens (the LB's default guess). */
export const SCENARIO_CHARS_PER_TOKEN = 4;
/** Probe and scrape intervals of the scenario LBs (peers are polled at the scrape interval). Long, so
 * nothing goes stale while a loaded machine runs a step: the proxy's test scrapes and polls on demand
 * after each step, as the simulator's runner does. */
export const SCENARIO_PROBES = { rttIntervalMs: 1_000, scrapeIntervalMs: 1_000, unhealthyAfter: 2 } as const;

/** The chat a scenario request sends: a shared system prompt, then the step's text. */
export function scenarioMessages(text: string): ChatMessageLike[] {
  return [
    { role: "system", content: "You are the scripted scenario's assistant. ".repeat(4) },
    { role: "user", content: text },
  ];
}

export function scenarioPromptChars(text: string): number {
  return chatSerialisedLength(scenarioMessages(text));
}

/** What the scripted engine reports: prompt tokens at 4 characters each, two reply tokens, no cache. */
export function scenarioUsage(text: string): Usage {
  return { promptTokens: Math.ceil(scenarioPromptChars(text) / SCENARIO_CHARS_PER_TOKEN), completionTokens: 2, cachedTokens: 0 };
}

/** Keys of the next turn (prompt + reply), or null when the reply completes no block (the proxy's rule). */
export function scenarioNextTurnKeys(text: string, reply: string): BlockKey[] | null {
  const prompt = chatBlockKeys(scenarioMessages(text));
  const next = chatBlockKeys([...scenarioMessages(text), { role: "assistant", content: reply }]);
  return next.length > prompt.length ? next : null;
}

/** The outcome of a served scenario request, as the driver measured it. */
export function scenarioOutcome(text: string, ttftMs: number | null, e2eMs: number): Outcome {
  return { status: 200, error: null, usage: scenarioUsage(text), reply: SCENARIO_REPLY, outputEvents: 0, ttftMs, e2eMs };
}

/** The session key the LB derives from a scenario request's `x-session-id: <id>` header. */
export function scenarioSessionKey(requestId: string): string {
  return `session:${requestId}`;
}

/** A log line in the scenario's "LB REQUEST OUTCOME [TARGET|CODE]" notation. */
export function expectedOf(entry: PlacementLogEntry): ExpectedPlacement {
  const request = entry.session.startsWith("session:") ? entry.session.slice("session:".length) : entry.session;
  const detail = entry.target ?? entry.code;
  return [entry.lb, request, entry.outcome, ...(detail === null ? [] : [detail])].join(" ");
}

/** Entries of one step in a canonical order: LBs act concurrently within a step, so only the
 * per-step set is meaningful across two runs, not the interleaving of different LBs. */
export function canonicalStep(entries: readonly PlacementLogEntry[]): PlacementLogEntry[] {
  const key = (e: PlacementLogEntry) => `${e.lb}\u0000${e.session}\u0000${e.attempt}\u0000${e.outcome}`;
  return [...entries].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}
