import { test } from "node:test";
import assert from "node:assert/strict";
import { EsTuner, eventRole, sampleFromEvent, type TunerTelemetry } from "./index";

const ok: TunerTelemetry = {
  configVersion: 3,
  ttftMs: 120,
  e2eMs: 900,
  replicaId: "r1",
  status: 200,
  error: null,
  inputTokens: 800,
  sessionKey: "s1",
  trialId: "1-abc",
  arm: "candidate",
  triggered: true,
};

test("a served request is a sample with its trial fields; a 5xx, a 429 and a transport error are failed samples", () => {
  assert.deepEqual(sampleFromEvent(ok), {
    configVersion: 3,
    ttftMs: 120,
    e2eMs: 900,
    replicaId: "r1",
    ok: true,
    trialId: "1-abc",
    arm: "candidate",
    triggered: true,
    sessionKey: "s1",
    inputTokens: 800,
  });
  for (const failed of [{ status: 502 }, { status: 429 }, { status: 200, error: "upstream reset" }]) {
    assert.equal(sampleFromEvent({ ...ok, ...failed, ttftMs: null })!.ok, false, JSON.stringify(failed));
  }
});

test("client errors (4xx) and client aborts (499) are not samples at all", () => {
  for (const status of [400, 401, 404, 413, 422, 499]) assert.equal(sampleFromEvent({ ...ok, status, ttftMs: null }), null, `status ${status}`);
});

test("a flood of 400s cannot veto candidates: the trial only sees the valid requests", () => {
  const tuner = new EsTuner({ seed: 1, trial: { permutations: 99 } });
  const trial = tuner.current().trial!;
  for (let i = 0; i < 1000; i++) {
    const sample = sampleFromEvent({ ...ok, status: 400, ttftMs: null, error: "bad request", trialId: trial.id, sessionKey: `attacker-${i}` });
    if (sample) tuner.observe(sample);
  }
  assert.deepEqual(tuner.trial()!.samples, { incumbent: 0, candidate: 0 });
  assert.equal(tuner.trajectory().length, 0, "no trial was decided, so no config push follows");
});

test("a forwarded request is one sample of a tuner of several LBs (the entry LB's event); the serving peer's event is a peer request", () => {
  const entry = { ...ok, replicaId: null, hop: 0 };
  const served = { ...ok, hop: 1 };
  const fleet = { member: true, spansLbs: true };
  assert.equal(eventRole(entry, fleet), "sample", "what the client experienced");
  assert.equal(eventRole(served, fleet), "peer", "the same request again");
  // A tuner of one LB: each LB's event is its own tuner's sample, and another LB's is a peer request.
  assert.equal(eventRole(served, { member: true, spansLbs: false }), "sample");
  assert.equal(eventRole(entry, { member: false, spansLbs: false }), "peer");
  assert.equal(eventRole({ status: 200 }, fleet), "sample", "an event without hop came from a client");
});

test("a request forwarded from an LB outside a fleet tuner is one sample, the serving member's successful event", () => {
  const holdsEntry = (entry: { lbId: string; policy: string | undefined }) => entry.policy !== "round-robin";
  const fleet = { member: true, spansLbs: true, holdsEntry };
  const forwarded = { hop: 1, status: 200, entryLbId: "lb-rr", entryPolicy: "round-robin" };
  // The entry LB's policy reads no weights: its event is a peer request to the fleet tuner, and the
  // serving member's event, naming it, is the request's one sample, whichever arrives first.
  assert.equal(eventRole({ hop: 0, status: 200 }, { ...fleet, member: false }), "peer");
  assert.equal(eventRole(forwarded, fleet), "sample");
  // A member refused it (503) and the entry LB moved it to another member: only the answer that
  // succeeded is the sample, so the request is not counted twice (nor as a failure its client never saw).
  assert.equal(eventRole({ ...forwarded, status: 503 }, fleet), "peer");
  // Entered at a member: the entry's event is the sample, this one is not counted again.
  assert.equal(eventRole({ ...forwarded, entryLbId: "lb-gorgo", entryPolicy: "gorgo" }, fleet), "peer");
  // An LB too old to name its entry: never counted twice.
  assert.equal(eventRole({ hop: 1, status: 200 }, fleet), "peer");
});
