// Runs a scripted LB scenario (@meridian/lb-core's LbScenario) on the simulator's LB model: the same
// LbDriver the fleet simulator uses, with scripted engines in place of EngineModels and the script's
// steps in place of a trace. The proxy runs the same script over HTTP (packages/proxy/test/
// scenario.test.ts); the two placement logs must be identical.
import {
  canonicalStep,
  SCENARIO_MODEL,
  SCENARIO_PROBES,
  scenarioMessages,
  scenarioNextTurnKeys,
  scenarioOutcome,
  scenarioPromptChars,
  scenarioSessionKey,
  type Completion,
  type LbScenario,
  type PlacementLogEntry,
} from "@meridian/lb-core";
import { chatBlockKeys, DEFAULT_WEIGHTS } from "@meridian/routing";
import { LbDriver, type Leg, type LbTransport, type SimLb } from "./lb-driver";

interface ScriptedRequest {
  id: string;
  text: string;
  model: string | null;
  /** The leg at the LB the client sent to, and the leg an engine is serving (differs when forwarded). */
  entry: Leg<ScriptedRequest> | null;
  serving: Leg<ScriptedRequest> | null;
  answered: boolean;
}

export interface ScenarioRun {
  /** The placement log, one canonically ordered list per step. */
  steps: PlacementLogEntry[][];
  /** Final HTTP status per request id, as its client saw it. */
  statuses: Record<string, number>;
}

/** Runs `scenario` in virtual time; the clock moves only when a step waits for an expiry. */
export function runLbScenario(scenario: LbScenario): ScenarioRun {
  const log: PlacementLogEntry[] = [];
  const loads = new Map<string, { running: number; waiting: number }>();
  const requests = new Map<string, ScriptedRequest>();
  const statuses: Record<string, number> = {};
  const wakes = new Map<SimLb<ScriptedRequest>, number>();
  let now = 0;

  const transport: LbTransport<ScriptedRequest> = {
    toReplica: (leg) => {
      leg.flight.serving = leg;
    },
    toPeer: (leg, peer) => {
      const r = leg.flight;
      driver.route(driver.admit(peer, r, { ...admitInput(r, leg.ticket.hop + 1), entry: { lbId: leg.lb.id, policy: leg.ticket.policy } }, now), now);
    },
    answered: (leg, completion: Completion) => {
      const r = leg.flight;
      if (leg.ticket.hop > 0) {
        // The peer's answer is what the forwarding LB's upstream exchange receives.
        const entry = r.entry!;
        const { status, error } = completion.outcome;
        if (status >= 400 && !driver.headers(entry, status, now)) return;
        driver.done(entry, status < 400 ? scenarioOutcome(r.text, 0, 0) : { ...scenarioOutcome(r.text, null, 0), status, error, usage: null, reply: "" }, now);
        return;
      }
      r.answered = true;
      statuses[r.id] = completion.outcome.status;
    },
    wakeAt: (lb, at) => {
      wakes.set(lb, at);
    },
  };

  const driver = new LbDriver<ScriptedRequest>(
    {
      replicas: scenario.lbs.flatMap((lb) => lb.replicas),
      // Each LB's config lists only its own replicas, with their models and states, as the proxy's does.
      lbs: scenario.lbs.map((lb) => ({
        id: lb.id,
        region: lb.region,
        policy: scenario.policy,
        weights: { ...DEFAULT_WEIGHTS },
        crossRegion: scenario.mode,
        replicas: lb.replicas.map((r) => ({ ...r, model: r.model ?? SCENARIO_MODEL })),
      })),
      limits: scenario.limits,
      probes: SCENARIO_PROBES,
      index: { capacityBlocks: 100_000, ttlMs: 3_600_000 },
      peerPollIntervalMs: SCENARIO_PROBES.scrapeIntervalMs,
      seedFor: () => scenario.seed,
      onPlacement: (_lb, entry) => log.push(entry),
    },
    transport,
  );
  driver.lbs.forEach((lb, i) => {
    for (const r of scenario.lbs[i]!.replicas) lb.core.probeSucceeded(r.id, r.rttMs);
  });

  function admitInput(r: ScriptedRequest, hop: number) {
    const messages = scenarioMessages(r.text);
    return {
      keys: chatBlockKeys(messages),
      sessionKey: scenarioSessionKey(r.id),
      model: r.model,
      hop,
      promptChars: scenarioPromptChars(r.text),
      nextTurnKeys: (reply: string) => scenarioNextTurnKeys(r.text, reply),
    };
  }

  /** What every LB's polls would have found by now: the scripted loads, then the peers' reports. */
  function observe(): void {
    for (const [i, lb] of driver.lbs.entries()) {
      for (const r of scenario.lbs[i]!.replicas) {
        const load = loads.get(r.id) ?? { running: 0, waiting: 0 };
        driver.scraped(lb, r.id, { ...load, usedTokens: 0 }, now);
      }
    }
    for (const lb of driver.lbs) {
      for (const peer of driver.lbs) if (peer !== lb) driver.peerPolled(lb, driver.peerReport(peer, lb, now), 0, now);
    }
  }

  const steps: PlacementLogEntry[][] = [];
  observe();
  for (const step of scenario.steps) {
    const before = log.length;
    if ("load" in step) {
      loads.set(step.load, { running: step.running, waiting: step.waiting });
    } else if ("send" in step) {
      const r: ScriptedRequest = { id: step.send, text: step.text, model: step.model ?? SCENARIO_MODEL, entry: null, serving: null, answered: false };
      requests.set(r.id, r);
      r.entry = driver.admit(driver.lb(step.lb), r, admitInput(r, 0), now);
      driver.route(r.entry, now);
    } else if ("finish" in step) {
      finish(step.finish);
    } else {
      const next = Math.min(...wakes.values());
      if (!Number.isFinite(next)) throw new Error(`${scenario.name}: nothing is held, nothing can expire`);
      now = Math.max(now, next);
      wakes.clear();
      for (const lb of driver.lbs) driver.wake(lb, now);
    }
    observe();
    steps.push(canonicalStep(log.slice(before)));
  }
  return { steps, statuses };

  function finish(id: string): void {
    const r = requests.get(id);
    const leg = r?.serving;
    if (!r || !leg) throw new Error(`${scenario.name}: request ${id} is not at an engine`);
    r.serving = null;
    driver.headers(leg, 200, now);
    if (leg.ticket.hop > 0) driver.headers(r.entry!, 200, now);
    driver.done(leg, scenarioOutcome(r.text, 0, 0), now);
  }
}
