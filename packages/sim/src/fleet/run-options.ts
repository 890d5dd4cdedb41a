// What a simulator run takes (simulateFleet's options), shared by the event loop and its records.
import type { PolicyName, ScrapedLoad, Weights } from "@meridian/routing";
import type { IndexMode } from "./result-json";
import type { TunerRunOptions } from "./tuner-driver";

export interface FleetRunOptions {
  policy: PolicyName;
  /** How the LBs know what the engines cache; default `learned`. */
  index?: IndexMode;
  /** Name in the output; defaults to the policy name. */
  label?: string;
  /** Cost weights for gorgo (and the tuner's starting point). Defaults to rtt 0.5, queue 0.1. */
  weights?: Weights;
  /** Run the online (1+1)-ES on each LB (gorgo only). */
  tuner?: TunerRunOptions;
  /**
   * Experiments: a time-slot split instead of a session split. From the first arrival, every LB runs
   * one of `weights` for each slot of `slotMs`, the slot's draw a hash of `salt` and the slot number;
   * records carry the weights each request was routed with. Not with `tuner`.
   */
  timeSlots?: TimeSlotSplit;
  seed: number;
  /** Keep one record per request in the result, served and refused (for --jsonl). */
  recordRequests?: boolean;
  /** Observes every routing decision with the LB's view next to the engines' true state (tests, debugging). */
  onDecision?: (trace: DecisionTrace) => void;
  /** Called as requests settle (served or refused), at most ~200 times per run. */
  onProgress?: (done: number, total: number) => void;
}

export interface TimeSlotSplit {
  slotMs: number;
  weights: readonly [Weights, Weights];
  salt: number;
}

export interface DecisionTrace {
  nowMs: number;
  lb: string;
  requestId: number;
  choice: string;
  /** Per candidate: what the LB believed (last scrape, its own counts) and what the engine had. */
  views: {
    replica: string;
    scraped: ScrapedLoad | null;
    inFlight: number;
    queuedTokens: number;
    rttMs: number;
    actualRunning: number;
    actualWaiting: number;
  }[];
}
