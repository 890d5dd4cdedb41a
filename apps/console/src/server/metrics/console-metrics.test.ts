// The console's /metrics: who may read it (loopback by the true client address, or the metrics
// token; never a forged X-Forwarded-For), what it says after real control-plane work (probes, config
// pushes, a failover and failback, telemetry, tuner steps), and that `promtool check metrics` finds
// nothing in it (skipped without promtool, a failure in CI: @meridian/proxy/testing).
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { armOf } from "@meridian/tuner";
import { havePromtool, metricFamilies, promtoolFindings } from "@meridian/proxy/testing";
import { requireMetricsAccess } from "../auth/metrics-access";
import { DEFAULT_REQUEST_SECURITY, type RequestSecurity } from "../auth/request-security";
import { SecurityAuditor } from "../auth/security-audit";
import { parseTrustedProxies } from "../auth/trusted-proxies";
import { listAudit } from "../services/audit";
import { createLb, failbackLb, failoverLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { updateTuner } from "../services/tuner";
import { CONSOLE_ORIGIN, consoleHeaders } from "../testing/console-requests";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { createHarness, OPERATOR, TEST_TOKEN, waitFor, type Harness } from "../testing/harness";

const METRICS_TOKEN = "metrics-token-0123456789";

describe("console /metrics access", () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  const read = (
    options: Parameters<typeof consoleHeaders>[0],
    security: RequestSecurity = DEFAULT_REQUEST_SECURITY,
    token: string | undefined = METRICS_TOKEN,
  ) =>
    requireMetricsAccess(h.rt, new Request(`${CONSOLE_ORIGIN}/metrics`, { headers: consoleHeaders({ origin: null, ...options }) }), {
      token,
      security,
      auditor: new SecurityAuditor(0),
    });

  test("a loopback client reads it without a token", async () => {
    assert.equal(await read({ peer: "127.0.0.1" }), null);
    assert.equal(await read({ peer: "::1" }), null);
    assert.equal(await read({ peer: "::ffff:127.0.0.1" }), null);
  });

  test("a remote client needs the metrics token; a forged X-Forwarded-For does not make it loopback", async () => {
    assert.equal(await read({ peer: "203.0.113.7", headers: { authorization: `Bearer ${METRICS_TOKEN}` } }), null);
    assert.equal((await read({ peer: "203.0.113.7" }))?.status, 401);
    assert.equal((await read({ peer: "203.0.113.7", headers: { "x-forwarded-for": "127.0.0.1" } }))?.status, 401);
    assert.equal((await read({ peer: "203.0.113.7", headers: { authorization: "Bearer wrong-token-0123456789" } }))?.status, 401);
    assert.equal((await read({ peer: "203.0.113.7", headers: { authorization: `Bearer ${TEST_TOKEN}` } }))?.status, 401, "the LB token is not a metrics token");
    assert.equal((await read({ peer: "203.0.113.7" }, DEFAULT_REQUEST_SECURITY, undefined))?.status, 401, "no token configured: loopback only");
  });

  test("an unknown peer is not loopback; behind a trusted proxy on this host the relayed client counts", async () => {
    assert.equal((await read({ peer: null }))?.status, 401);
    const behindNginx: RequestSecurity = { trustedProxies: parseTrustedProxies("loopback"), publicOrigin: null };
    assert.equal((await read({ peer: "127.0.0.1", headers: { "x-forwarded-for": "198.51.100.9" } }, behindNginx))?.status, 401);
    assert.equal(await read({ peer: "127.0.0.1", headers: { "x-forwarded-for": "127.0.0.1" } }, behindNginx), null);
  });

  test("a refusal is audited with the true address", async () => {
    const refused = await read({ peer: "203.0.113.8", headers: { "x-forwarded-for": "127.0.0.1" } });
    assert.ok(refused);
    assert.equal(refused.status, 401);
    assert.match(((await refused.json()) as { error: { message: string } }).error.message, /MERIDIAN_METRICS_TOKEN/);
    const audited = (await listAudit(h.rt, { action: "auth.denied" })).find((e) => e.target === "api:/metrics");
    assert.equal((audited?.after as { address?: string } | null)?.address, "203.0.113.8");
  });
});

describe("console /metrics content", () => {
  let h: Harness;
  const lbs: FakeLb[] = [];
  before(async () => {
    h = await createHarness({ version: "1.2.3" });
    for (const region of ["us-ashburn", "eu-frankfurt"]) {
      const fake = await startFakeLb({ id: `lb-${region}`, region, token: TEST_TOKEN });
      lbs.push(fake);
      await createRegion(h.rt, OPERATOR, { name: region });
      await createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: fake.url, region }, `lb-${region}`);
      await createReplica(h.rt, OPERATOR, { name: `${region}-a`, url: "http://127.0.0.1:9", region, engine: "sglang", model: "m" });
    }
    await h.rt.start();
    await waitFor(() => lbs.every((lb) => lb.version > 0), 5_000, "configs pushed");
    await h.rt.health.tick();
    await failoverLb(h.rt, OPERATOR, { id: "lb-eu-frankfurt" });
    await failbackLb(h.rt, OPERATOR, { id: "lb-eu-frankfurt" });
    // Small trials so a few dozen events decide one.
    await updateTuner(h.rt, OPERATOR, { lbId: "lb-us-ashburn", trial: { lookEvery: 10, maxSamples: 120 } });
    await h.rt.tuners.startTuning("lb-us-ashburn");
    await waitFor(() => h.rt.telemetry.status().every((s) => s.connected), 5_000, "telemetry streams open");
    const trial = (await h.rt.tuners.ensure("lb-us-ashburn")).tuner.current().trial!;
    await waitFor(() => lbs[0]!.configs.at(-1)?.trial?.id === trial.id, 5_000, "the trial is live on the LB");
    // The LB's events of the trial, the candidate clearly slower, up to the cap: one tuner step (a
    // rejection; every event is on one replica, so the trial is judged on its share at the cap).
    for (let i = 0; i < 120; i++) {
      const sessionKey = `metrics-s${i}`;
      const arm = armOf(sessionKey, trial.salt, trial.share);
      lbs[0]!.emit({ trialId: trial.id, arm, triggered: true, sessionKey, ttftMs: arm === "candidate" ? 900 : 100, e2eMs: 400 + i });
    }
    await waitFor(async () => (await h.rt.tuners.describe("lb-us-ashburn")).steps.length > 0, 5_000, "a tuner step");
    await h.rt.health.tick();
  });
  after(async () => {
    await h.close();
    for (const lb of lbs) await lb.close();
  });

  test("it says what the control plane did", async () => {
    const { text, contentType } = await h.rt.metrics.render();
    assert.match(contentType, /^text\/plain/);
    const families = metricFamilies(text);
    for (const name of ["process_cpu_seconds_total", "nodejs_eventloop_lag_seconds", "meridian_console_build_info"]) assert.ok(families.has(name), name);
    assert.match(text, /^meridian_console_build_info\{version="1\.2\.3",nodejs="v[^"]+"\} 1$/m);
    assert.match(text, /^meridian_console_lb_up\{lb="lb-us-ashburn"\} 1$/m);
    assert.match(text, /^meridian_console_lb_state\{lb="lb-eu-frankfurt",state="healthy"\} 1$/m);
    assert.match(text, /^meridian_console_config_pushes_total\{lb="lb-us-ashburn",result="acked"\} [1-9]\d*$/m);
    assert.match(text, /^meridian_console_lb_config_version\{lb="lb-us-ashburn",kind="acked"\} [1-9]\d*$/m);
    assert.match(text, /^meridian_console_failovers_total\{lb="lb-eu-frankfurt",trigger="operator"\} 1$/m);
    assert.match(text, /^meridian_console_failbacks_total\{lb="lb-eu-frankfurt",trigger="operator"\} 1$/m);
    // At 0 before an LB's first event, so increase() sees that event (a series born at 1 has none).
    assert.match(text, /^meridian_console_failovers_total\{lb="lb-us-ashburn",trigger="automatic"\} 0$/m);
    assert.match(text, /^meridian_console_config_pushes_total\{lb="lb-eu-frankfurt",result="rejected"\} 0$/m);
    assert.match(text, /^meridian_console_entrypoint_status\{region="us-ashburn",status="assigned"\} 1$/m);
    assert.match(text, /^meridian_console_telemetry_connected\{lb="lb-us-ashburn"\} 1$/m);
    assert.match(text, /^meridian_console_telemetry_events_total\{lb="lb-us-ashburn"\} [1-9]\d*$/m);
    assert.match(text, /^meridian_console_telemetry_lag_seconds\{lb="lb-us-ashburn"\} /m);
    assert.match(text, /^meridian_console_telemetry_lag_events\{lb="lb-us-ashburn"\} \d+$/m);
    assert.match(text, /^meridian_console_tuner_steps_total\{lb="lb-us-ashburn",kind="[a-z-]+"\} 1$/m);
    // Every tuner's steps at 0 before its first step of each kind, so increase() sees that step (a
    // series born at 1 has none, and MeridianTunerStalled called a tuner that had stepped stalled).
    for (const kind of ["candidate", "remeasure", "trial"]) {
      assert.match(text, new RegExp(`^meridian_console_tuner_steps_total\\{lb="lb-eu-frankfurt",kind="${kind}"\\} 0$`, "m"), `lb-eu-frankfurt ${kind}`);
    }
    assert.match(text, /^meridian_console_tuner_steps_total\{lb="lb-us-ashburn",kind="remeasure"\} 0$/m);
    assert.match(text, /^meridian_console_tuner_accepted_steps_total\{lb="lb-us-ashburn"\} [01]$/m);
    assert.match(text, /^meridian_console_tuner_accepted_steps_total\{lb="lb-eu-frankfurt"\} 0$/m);
    // Candidates rejected while breaking a guardrail, from the steps' record; every guardrail of every
    // tuner from 0.
    const steps = (await h.rt.tuners.describe("lb-us-ashburn")).steps;
    for (const guardrail of ["e2e", "share", "errors"]) {
      const rejected = steps.filter((step) => !step.accepted && step.guardrail === guardrail).length;
      assert.match(
        text,
        new RegExp(`^meridian_console_tuner_guardrail_rejections_total\\{lb="lb-us-ashburn",guardrail="${guardrail}"\\} ${rejected}$`, "m"),
        guardrail,
      );
      assert.match(
        text,
        new RegExp(`^meridian_console_tuner_guardrail_rejections_total\\{lb="lb-eu-frankfurt",guardrail="${guardrail}"\\} 0$`, "m"),
        guardrail,
      );
    }
    assert.ok(
      steps.some((step) => step.guardrail !== null && !step.accepted),
      "the fixture's step is a guardrail rejection",
    );
    assert.match(text, /^meridian_console_tuner_state\{lb="lb-us-ashburn",state="running"\} 1$/m);
    assert.match(text, /^meridian_console_tuner_state\{lb="lb-eu-frankfurt",state="stopped"\} 1$/m);
    assert.match(text, /^meridian_console_tuner_trial_info\{lb="lb-us-ashburn",role="[a-z]+",mode="online"\} 1$/m);
    assert.match(text, /^meridian_console_tuner_weight\{lb="lb-us-ashburn",term="rtt",role="live"\} /m);
  });

  test("promtool check metrics finds nothing", async (t) => {
    if (!havePromtool(t)) return;
    assert.equal(promtoolFindings((await h.rt.metrics.render()).text), "");
  });
});
