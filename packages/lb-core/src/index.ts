// @meridian/lb-core: one load balancer's decisions and bookkeeping without I/O, driven by the proxy
// (wall clock, HTTP) and by the simulator (virtual clock). See README.md and docs/ARCHITECTURE.md.
export { LbCore, MAX_ATTEMPTS, DEFAULT_PEER_SNAPSHOT_KEYS } from "./lb-core";
export type { CacheModel, LbCoreOptions, Settled } from "./lb-core";
export type { PlacementLogEntry } from "./placement";
export type { DecodeSample, FirstBytePlan } from "./deadline";
export type { RedispatchCause } from "./redispatch";
export type { TargetChanges } from "./targets";
export { Ticket, failures } from "./ticket";
export type { AdmitInput, Failure, ForwardEntry, Target, TargetKind } from "./ticket";
export type { Placement } from "./placement";
export { Completion, isSuccess } from "./completion";
export type { LearnInstruction, Outcome, TelemetryEventBody, Usage } from "./completion";
export { HoldQueue } from "./hold-queue";
export { PeerRecord, PredictionSums, ReplicaRecord, STALE_AFTER_INTERVALS } from "./targets";
export type { HealthChange, PeerReportBody, ScrapeRecord } from "./targets";
export type { LbStateBody, StateExtras } from "./reports";
export { nextRttEwma, RTT_EWMA_ALPHA, RttEstimate } from "./rtt";
export {
  canonicalStep,
  expectedOf,
  SCENARIO_MODEL,
  SCENARIO_PROBES,
  SCENARIO_REPLY,
  scenarioMessages,
  scenarioNextTurnKeys,
  scenarioOutcome,
  scenarioPromptChars,
  scenarioSessionKey,
  scenarioUsage,
} from "./scenario";
export type { ExpectedPlacement, LbScenario, ScenarioLb, ScenarioLimits, ScenarioReplica, ScenarioStep } from "./scenario";
