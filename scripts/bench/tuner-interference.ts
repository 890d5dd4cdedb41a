// The interference between a trial's two arms, measured (bench:tuner's `interference`). Both arms
// share the replicas' queues and caches, so an arm's p95 in a trial is not the p95 its weights give
// deployed alone. Here one pair of weight sets runs as a standing trial on every LB (no tuner
// deciding it: FleetSpec's LbSpec.trial) at several candidate shares; each arm's p95 TTFT stands
// beside the p95 each weight set gives when every LB runs it alone (tuner-windows.ts measures that).
// A split that measured no interference would give each arm its deployed-alone p95 at every share.
// The same pair as a time-slot split (the alternative the session split was chosen over) says what
// that one costs.
//
// Library only: scripts/bench/tuner.ts calls it and prints the result.

import { percentile, simulateFleet, type FleetSpec, type RequestRecord, type SimRequest } from "@meridian/sim";
import type { Weights } from "@meridian/routing";
import { sameWeights } from "@meridian/tuner";
import { EVAL_SEEDS, everyLbOn, frozenFleet, round, sentAwayShare } from "./tuner-regimes";

/** The candidate's shares of sessions the pair is run at: a minority, an even split, a majority. */
export const INTERFERENCE_SHARES: readonly number[] = [0.1, 0.5, 0.9];

interface Pair {
  incumbent: Weights;
  candidate: Weights;
}

/** The arm a served request ran in: records carry the weights it was routed with. */
const armRoutedIn = (record: RequestRecord, pair: Pair): keyof Pair => (sameWeights(record.weights, pair.candidate) ? "candidate" : "incumbent");

/** Served requests' p95 TTFT, ms (refusals carry no session, so no arm: they are counted apart). */
function p95Of(records: readonly RequestRecord[]): number | null {
  return records.length === 0
    ? null
    : round(
        percentile(
          records.map((r) => r.ttft_ms),
          95,
        ),
        1,
      );
}

/** The pair as a standing trial at `share`, over `seeds` pooled: each arm's served p95 TTFT. */
export function splitAt(spec: FleetSpec, requests: readonly SimRequest[], pair: Pair, share: number, seeds: readonly number[]) {
  const arms = { incumbent: [] as RequestRecord[], candidate: [] as RequestRecord[] };
  let refused = 0;
  for (const seed of seeds) {
    // A salt per seed: which sessions test the candidate is part of the draw, as in a live trial.
    const trial = { id: `interference-${seed}`, salt: `interference-${seed}`, share, candidate: { ...pair.candidate } };
    const frozen = frozenFleet(spec, everyLbOn(spec, pair.incumbent));
    const fleet = { ...frozen, lbs: frozen.lbs.map((lb) => ({ ...lb, trial })) };
    const run = simulateFleet(fleet, requests, { policy: "gorgo", seed, recordRequests: true });
    refused += run.summary.requests - run.summary.completed;
    for (const record of run.records ?? []) arms[armRoutedIn(record, pair)].push(record);
  }
  return {
    candidate_share: share,
    incumbent_arm_p95_ms: p95Of(arms.incumbent),
    candidate_arm_p95_ms: p95Of(arms.candidate),
    samples: { incumbent: arms.incumbent.length, candidate: arms.candidate.length },
    sent_away: { incumbent: sentAwayShare(arms.incumbent), candidate: sentAwayShare(arms.candidate) },
    refused,
  };
}

/** Slot lengths of the time-slot split, in requests of the whole fleet (mean arrival rate). */
export const SLOT_REQUESTS: readonly number[] = [50, 250, 1000];

/**
 * The pair as a time-slot split (every LB on one set per slot, drawn per slot): each set's served p95
 * over all its slots, and over the second half of each slot only (the cache-warm discard:
 * queues and caches the previous slot left have had half a slot to settle).
 */
function slotsOf(spec: FleetSpec, requests: readonly SimRequest[], pair: Pair, slotRequests: number, seeds: readonly number[]) {
  const first = requests[0]!.arrivalMs;
  const span = requests[requests.length - 1]!.arrivalMs - first;
  const slotMs = (span / requests.length) * slotRequests;
  const all = { incumbent: [] as RequestRecord[], candidate: [] as RequestRecord[] };
  const settled = { incumbent: [] as RequestRecord[], candidate: [] as RequestRecord[] };
  for (const seed of seeds) {
    const weights = [pair.incumbent, pair.candidate] as const;
    const run = simulateFleet(frozenFleet(spec), requests, { policy: "gorgo", seed, recordRequests: true, timeSlots: { slotMs, weights, salt: seed } });
    for (const record of run.records ?? []) {
      const arm = armRoutedIn(record, pair);
      all[arm].push(record);
      // Slots start 1 ms before the first arrival (the event loop's SlotStart).
      if (((record.arrival_ms - first + 1) % slotMs) / slotMs >= 0.5) settled[arm].push(record);
    }
  }
  return {
    slot_requests: slotRequests,
    slots_per_run: Math.ceil(span / slotMs),
    all_requests: { incumbent_p95_ms: p95Of(all.incumbent), candidate_p95_ms: p95Of(all.candidate) },
    second_half_of_each_slot: { incumbent_p95_ms: p95Of(settled.incumbent), candidate_p95_ms: p95Of(settled.candidate) },
  };
}

/**
 * The pair split at each of `shares` and by time slots, beside `deployed`: its p95s deployed alone
 * (measured by tuner-windows.ts over the same requests and seeds). `agrees_with_deployment` says, per share,
 * whether the arms rank the two weight sets as deploying each alone does: where it does not, a trial
 * at that share is biased toward the wrong one, however many samples it takes.
 */
export function interference(
  spec: FleetSpec,
  requests: readonly SimRequest[],
  pair: Pair,
  deployed: Record<keyof Pair, number>,
  shares: readonly number[] = INTERFERENCE_SHARES,
  seeds: readonly number[] = EVAL_SEEDS,
) {
  const candidateBetterAlone = deployed.candidate < deployed.incumbent;
  const agrees = (incumbent: number | null, candidate: number | null) =>
    incumbent === null || candidate === null ? null : candidate < incumbent === candidateBetterAlone;
  return {
    pair,
    seeds,
    deployed_alone_p95_ms: deployed,
    split: shares.map((share) => {
      const s = splitAt(spec, requests, pair, share, seeds);
      return { ...s, agrees_with_deployment: agrees(s.incumbent_arm_p95_ms, s.candidate_arm_p95_ms) };
    }),
    time_slots: SLOT_REQUESTS.map((n) => {
      const t = slotsOf(spec, requests, pair, n, seeds);
      return {
        ...t,
        agrees_with_deployment: agrees(t.all_requests.incumbent_p95_ms, t.all_requests.candidate_p95_ms),
        agrees_after_discard: agrees(t.second_half_of_each_slot.incumbent_p95_ms, t.second_half_of_each_slot.candidate_p95_ms),
      };
    }),
  };
}
