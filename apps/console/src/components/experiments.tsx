"use client";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { useTRPC } from "../trpc/client";
import { LIVE_INTERVAL_MS } from "../trpc/query-client";
import { fmtDateTime, fmtMs, fmtNum, fmtPct } from "../lib/format";
import { asExperimentResult, asGridResult, type ExperimentResult } from "../lib/experiment-result";
import { EXPERIMENT_POLICY_OPTIONS, type ExperimentPolicy } from "../lib/policies";
import { PolicyBarChart } from "./charts";
import { LandscapeView } from "./landscape-view";
import { TtftAge } from "./overview";
import { useCanMutate } from "./session";
import { Badge, ErrorText, NumberField, PageHeader, Panel, QueryView, ReadOnlyNote } from "./ui";
import { useInvalidateAll } from "./use-action";

const DEFAULT_POLICIES: ExperimentPolicy[] = ["gorgo", "least-request", "prefix-cache", "round-robin"];

/** A field's name with the values it accepts beside it, so an out-of-range value is no surprise. */
function RangeLabel({ name, range }: { name: string; range: string }) {
  return (
    <>
      {name} <span className="muted small">{range}</span>
    </>
  );
}

function RunForm({ onStarted }: { onStarted: (id: string) => void }) {
  const trpc = useTRPC();
  const traces = useQuery(trpc.experiments.traces.queryOptions());
  const [traceId, setTraceId] = useState("");
  const [fromMs, setFromMs] = useState("0");
  const [toMs, setToMs] = useState("600000");
  const [timeScale, setTimeScale] = useState("2");
  const [policies, setPolicies] = useState<ExperimentPolicy[]>(DEFAULT_POLICIES);
  const [kind, setKind] = useState<"compare" | "grid">("compare");
  const [preset, setPreset] = useState<"paper" | "global">("paper");
  const [promptFactor, setPromptFactor] = useState("1");
  const [points, setPoints] = useState("7");
  const run = useMutation(trpc.experiments.run.mutationOptions({ onSuccess: (r) => onStarted(r.id) }));
  const chosenTrace = traceId || traces.data?.[0]?.id || "";

  function toggle(p: ExperimentPolicy) {
    setPolicies((ps) => (ps.includes(p) ? ps.filter((x) => x !== p) : [...ps, p]));
  }
  function submit(e: FormEvent) {
    e.preventDefault();
    run.mutate({
      traceId: chosenTrace,
      ...(fromMs.trim() ? { fromMs: Number(fromMs) } : {}),
      ...(toMs.trim() ? { toMs: Number(toMs) } : {}),
      timeScale: Number(timeScale),
      kind,
      policies: kind === "grid" ? [] : EXPERIMENT_POLICY_OPTIONS.filter((p) => policies.includes(p)),
      ...(kind === "grid" ? { grid: { preset, promptFactor: Number(promptFactor), points: Number(points) } } : {}),
    });
  }

  return (
    <form className="form-grid" onSubmit={submit} data-testid="experiment-form">
      <label>
        Run
        <select value={kind} onChange={(e) => setKind(e.target.value as "compare" | "grid")} data-testid="experiment-kind">
          <option value="compare">compare policies</option>
          <option value="grid">weight landscape (what-if grid)</option>
        </select>
      </label>
      <label className="span-2">
        Trace
        <select value={chosenTrace} onChange={(e) => setTraceId(e.target.value)} data-testid="experiment-trace">
          {(traces.data ?? []).map((t) => (
            <option key={t.id} value={t.id}>
              {t.label}
            </option>
          ))}
        </select>
      </label>
      <NumberField label="Window from (ms)" value={fromMs} onChange={setFromMs} testId="experiment-from" />
      <NumberField label="Window to (ms)" value={toMs} onChange={setToMs} testId="experiment-to" />
      <NumberField label="time_scale" fractional value={timeScale} onChange={setTimeScale} testId="experiment-time-scale" />
      {kind === "grid" ? (
        <fieldset className="wide">
          <legend>Landscape</legend>
          <label>
            Fleet preset
            <select value={preset} onChange={(e) => setPreset(e.target.value as "paper" | "global")} data-testid="experiment-grid-preset">
              <option value="paper">paper (one LB, clients beside it)</option>
              <option value="global">global (an LB and clients in every region)</option>
            </select>
          </label>
          {/* The ranges the server accepts (routers/experiments.ts), beside the fields as the tuner's bounds are. */}
          <NumberField
            label={<RangeLabel name="Prompt length factor" range="(0, 1]" />}
            fractional
            value={promptFactor}
            onChange={setPromptFactor}
            testId="experiment-grid-prompt"
          />
          <NumberField label={<RangeLabel name="Points per axis" range="2–12" />} value={points} onChange={setPoints} testId="experiment-grid-points" />
        </fieldset>
      ) : null}
      <fieldset className="wide" hidden={kind === "grid"}>
        <legend>Policies</legend>
        <div className="checks">
          {EXPERIMENT_POLICY_OPTIONS.map((p) => (
            <label key={p} className="check">
              <input type="checkbox" checked={policies.includes(p)} onChange={() => toggle(p)} data-testid={`experiment-policy-${p}`} /> {p}
            </label>
          ))}
        </div>
      </fieldset>
      <div className="form-actions">
        <button
          type="submit"
          className="btn btn-primary btn-solid"
          disabled={run.isPending || !chosenTrace || (kind === "compare" && policies.length === 0)}
          data-testid="experiment-run"
        >
          {run.isPending ? "Starting…" : "Run experiment"}
        </button>
        <ErrorText error={run.error ?? traces.error} testId="experiment-run-error" />
      </div>
    </form>
  );
}

/** Live traffic next to the offline numbers, so a simulated policy can be judged against production. */
function LiveComparison() {
  const trpc = useTRPC();
  const summary = useQuery({ ...trpc.overview.summary.queryOptions(), refetchInterval: LIVE_INTERVAL_MS });
  if (!summary.data) return null;
  // As on the overview: the newest complete bucket that measured a TTFT, while recent.
  const latest = summary.data.ttftLatest;
  const ttft = latest?.recent ? latest : null;
  const policies = [...new Set(summary.data.regions.flatMap((r) => r.lbs.map((lb) => lb.policy)))];
  return (
    <div className="live-compare muted small" data-testid="experiment-live">
      Live now ({policies.join(", ") || "no LB"}): TTFT p50 {fmtMs(ttft?.p50)}, p95 {fmtMs(ttft?.p95)} (<TtftAge latest={latest} />) ·{" "}
      {fmtNum(summary.data.rps, 1)} req/s · errors {fmtPct(summary.data.errorRate, 2)}
    </div>
  );
}

function ResultView({ result }: { result: ExperimentResult }) {
  const rows = result.policies;
  const latency = rows.map((p) => ({ name: p.name, ttftP95: p.ttft_ms.p95, e2eP95: p.e2e_ms.p95 }));
  const share = rows.map((p) => ({ name: p.name, maxShare: p.max_share, cacheHit: p.cache_hit_rate }));
  const bestTtft = Math.min(...rows.flatMap((p) => (p.ttft_ms.p95 === null ? [] : [p.ttft_ms.p95])));
  return (
    <>
      <div className="table-wrap">
        <table className="table compact" data-testid="experiment-results">
          <thead>
            <tr>
              <th>Policy</th>
              <th className="num">Requests</th>
              <th className="num">Completed</th>
              <th className="num">TTFT p50</th>
              <th className="num">TTFT p95</th>
              <th className="num">TTFT p99</th>
              <th className="num">E2E p50</th>
              <th className="num">E2E p95</th>
              <th className="num">E2E p99</th>
              <th className="num">ITL p50</th>
              <th className="num">Throughput</th>
              <th className="num">Cache hit</th>
              <th className="num">Max share</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((p) => (
              <tr key={p.name} data-testid={`experiment-result-${p.name}`}>
                <td className="mono strong">
                  {p.name}
                  {p.ttft_ms.p95 === bestTtft ? (
                    <>
                      {" "}
                      <Badge tone="ok">best p95</Badge>
                    </>
                  ) : null}
                </td>
                <td className="num">{fmtNum(p.requests)}</td>
                <td className="num">{fmtNum(p.completed)}</td>
                <td className="num">{fmtMs(p.ttft_ms.p50)}</td>
                <td className="num">{fmtMs(p.ttft_ms.p95)}</td>
                <td className="num">{fmtMs(p.ttft_ms.p99)}</td>
                <td className="num">{fmtMs(p.e2e_ms.p50)}</td>
                <td className="num">{fmtMs(p.e2e_ms.p95)}</td>
                <td className="num">{fmtMs(p.e2e_ms.p99)}</td>
                <td className="num">{fmtMs(p.itl_ms_p50)}</td>
                <td className="num">{fmtNum(p.throughput_rps, 2)} rps</td>
                <td className="num">{fmtPct(p.cache_hit_rate)}</td>
                <td className={`num ${p.max_share >= 0.8 ? "text-bad" : ""}`}>{fmtPct(p.max_share)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <LiveComparison />
      <div className="grid-2">
        <PolicyBarChart
          testId="chart-experiment-latency"
          data={latency}
          metrics={[
            { key: "ttftP95", label: "TTFT p95" },
            { key: "e2eP95", label: "E2E p95" },
          ]}
          unit=" ms"
        />
        <PolicyBarChart
          testId="chart-experiment-share"
          data={share}
          metrics={[
            { key: "maxShare", label: "max replica share" },
            { key: "cacheHit", label: "cache hit rate" },
          ]}
          percent
        />
      </div>
    </>
  );
}

function SaveForm({ id, initialName }: { id: string; initialName: string }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const [name, setName] = useState(initialName);
  const save = useMutation(trpc.experiments.save.mutationOptions({ onSuccess: invalidateAll }));
  return (
    <form
      className="inline-form"
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate({ id, name: name.trim() });
      }}
      data-testid="experiment-save-form"
    >
      <input
        value={name}
        onChange={(e) => setName(e.target.value)}
        placeholder="name this run"
        aria-label="Name of this run"
        required
        data-testid="experiment-save-name"
      />
      <button type="submit" className="btn btn-primary" disabled={save.isPending} data-testid="experiment-save">
        Save
      </button>
      {initialName ? (
        <span className="ok-text" data-testid="experiment-saved">
          Saved as “{initialName}”.
        </span>
      ) : null}
      <ErrorText error={save.error} testId="experiment-save-error" />
    </form>
  );
}

function RunView({ id, canMutate }: { id: string; canMutate: boolean }) {
  const trpc = useTRPC();
  const status = useQuery({
    ...trpc.experiments.status.queryOptions({ id }),
    // Poll only while the run is in progress; a finished run's result never changes.
    refetchInterval: (q) => (q.state.data && (q.state.data.state === "done" || q.state.data.state === "failed") ? false : 1000),
  });
  return (
    <QueryView query={status}>
      {(s) => (
        <div data-testid="experiment-run-view" data-state={s.state}>
          <div className="progress-row">
            <div className="progress" data-testid="experiment-progress" data-progress={s.progress.toFixed(3)}>
              <div className={`progress-fill ${s.state === "failed" ? "progress-bad" : ""}`} style={{ width: `${Math.round(s.progress * 100)}%` }} />
            </div>
            <span className="mono small" data-testid="experiment-state">
              {s.state} · {Math.round(s.progress * 100)}%
            </span>
          </div>
          {s.error ? (
            <div className="error-text" role="alert" data-testid="experiment-error">
              {s.error}
            </div>
          ) : null}
          {s.state === "done" ? (
            <>
              {canMutate ? <SaveForm key={s.name ?? ""} id={id} initialName={s.name ?? ""} /> : null}
              {asExperimentResult(s.result) ? (
                <ResultView result={asExperimentResult(s.result)!} />
              ) : asGridResult(s.result) ? (
                <LandscapeView result={asGridResult(s.result)!} />
              ) : (
                <div className="error-text">The run finished but its result is neither a policy comparison nor a landscape.</div>
              )}
            </>
          ) : null}
        </div>
      )}
    </QueryView>
  );
}

export function ExperimentsPage() {
  const trpc = useTRPC();
  const canMutate = useCanMutate();
  const [currentId, setCurrentId] = useState<string | null>(null);
  const list = useQuery({ ...trpc.experiments.list.queryOptions(), refetchInterval: LIVE_INTERVAL_MS * 2 });

  return (
    <div data-testid="page-experiments">
      <PageHeader title="Experiments" subtitle="Replay a trace through the simulator to compare policies offline." />
      {!canMutate ? <ReadOnlyNote /> : null}
      {canMutate ? (
        <Panel title="New run">
          <RunForm onStarted={setCurrentId} />
        </Panel>
      ) : null}
      {currentId ? (
        <Panel title={`Run ${currentId}`} testId="experiment-current">
          <RunView key={currentId} id={currentId} canMutate={canMutate} />
        </Panel>
      ) : null}
      <Panel title="Saved and recent runs">
        <QueryView query={list} isEmpty={(d) => d.length === 0} empty="No experiments yet.">
          {(rows) => (
            <>
              {/* The server lists every saved run first, then the newest unsaved ones: say so, so that an
                unsaved run that dropped off is no surprise and saving is the way to keep one. */}
              <p className="muted small">Every saved run, then the most recent unsaved ones: save a run to keep it listed.</p>
              <table className="table compact" data-testid="experiment-list">
                <thead>
                  <tr>
                    <th>Name</th>
                    <th>Trace</th>
                    <th>Policies</th>
                    <th>State</th>
                    <th>Created</th>
                    <th />
                  </tr>
                </thead>
                <tbody>
                  {rows.map((x) => (
                    <tr key={x.id} data-testid={`experiment-row-${x.id}`}>
                      <td className="strong">{x.name ?? <span className="muted">unsaved</span>}</td>
                      <td className="mono">{x.traceId}</td>
                      <td className="mono small">{x.policies.join(", ")}</td>
                      <td>{x.state}</td>
                      <td className="nowrap">{fmtDateTime(x.createdAt)}</td>
                      <td>
                        <button type="button" className="btn btn-small" onClick={() => setCurrentId(x.id)} data-testid={`experiment-open-${x.id}`}>
                          Open
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
        </QueryView>
      </Panel>
    </div>
  );
}
