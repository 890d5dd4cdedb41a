"use client";
// The live A/B trial of one LB's tuner: both arms' p95 TTFT with their intervals, the samples in
// each arm, how far the trial is, and the last decision with the numbers behind it.
import { fmtMs, fmtWeight } from "../lib/format";
import { Badge, Stat } from "./ui";

type Arm = "incumbent" | "candidate";
type Interval = { lo: number | null; hi: number | null };

export interface LiveTrialView {
  id: string;
  /** False while the trial waits for the push rate limit. */
  published: boolean;
  share: number;
  incumbent: { rtt: number; queue: number };
  candidate: { rtt: number; queue: number };
  samples: Record<Arm, number>;
  triggered: Record<Arm, number>;
  maxSamples: number;
  looks: number;
  /** Null before the first look. */
  p95TtftMs: Record<Arm, number | null> | null;
  p95Interval: Record<Arm, Interval> | null;
  pBetter: number | null;
  alphaAtLook: number | null;
}

export interface TrialDecisionView {
  step: number;
  decision: string;
  reason: string;
  accepted: boolean;
}

function fmtP(p: number | null): string {
  if (p == null) return "–";
  return p < 0.001 ? p.toExponential(1) : p.toFixed(3);
}

function interval(i: Interval | undefined): string {
  if (!i) return "";
  return `[${i.lo == null ? "–" : fmtMs(i.lo)}, ${i.hi == null ? "open" : fmtMs(i.hi)}]`;
}

/** Both arms on one axis: the p95 as a dot, its interval as a bar. */
function ArmBars({ trial }: { trial: LiveTrialView }) {
  const p95 = trial.p95TtftMs;
  const ivl = trial.p95Interval;
  if (!p95 || !ivl) return null;
  const values = (["incumbent", "candidate"] as const).flatMap((a) => [p95[a], ivl[a].lo, ivl[a].hi]).filter((v): v is number => v != null);
  if (values.length === 0) return null;
  const max = Math.max(...values) * 1.1;
  const x = (v: number) => 8 + (v / max) * 284;
  return (
    <svg viewBox="0 0 300 64" width="100%" aria-label="p95 TTFT per arm with intervals" data-testid="tuner-trial-bars">
      {(["incumbent", "candidate"] as const).map((arm, i) => {
        const yy = 16 + i * 28;
        const lo = ivl[arm].lo ?? 0;
        const hi = ivl[arm].hi ?? max;
        const colour = arm === "candidate" ? "#f28e2b" : "#4e79a7";
        return (
          <g key={arm}>
            <line
              x1={x(lo)}
              x2={x(hi)}
              y1={yy}
              y2={yy}
              stroke={colour}
              strokeWidth={6}
              strokeOpacity={0.35}
              strokeDasharray={ivl[arm].hi == null ? "4 3" : undefined}
            />
            {p95[arm] != null ? <circle cx={x(p95[arm]!)} cy={yy} r={5} fill={colour} /> : null}
            <text x={8} y={yy - 8} fontSize={9} fill="#8a94a6">
              {arm}
            </text>
          </g>
        );
      })}
    </svg>
  );
}

export function LiveTrialPanel({ trial, last, paused }: { trial: LiveTrialView | null; last: TrialDecisionView | null; paused: string | null }) {
  if (!trial) {
    return (
      <div className="state state-empty" data-testid="tuner-trial-none">
        {paused
          ? `No trial while paused: ${paused}.`
          : "No trial running. Start online tuning: each trial routes a share of sessions with a candidate's weights."}
      </div>
    );
  }
  const total = trial.samples.incumbent + trial.samples.candidate;
  return (
    <div data-testid="tuner-trial">
      <div className="stats">
        <Stat
          label="Trial"
          value={
            <span data-testid="tuner-trial-id">
              {trial.id} {trial.published ? null : <Badge tone="neutral">waiting to be pushed</Badge>}
            </span>
          }
        />
        <Stat
          label="Candidate"
          value={
            <span data-testid="tuner-trial-candidate">
              {fmtWeight(trial.candidate.rtt)} / {fmtWeight(trial.candidate.queue)}
            </span>
          }
        />
        <Stat label="Incumbent" value={`${fmtWeight(trial.incumbent.rtt)} / ${fmtWeight(trial.incumbent.queue)}`} />
        <Stat
          label="Samples (incumbent + candidate)"
          value={
            <span data-testid="tuner-trial-samples">
              {trial.samples.incumbent} + {trial.samples.candidate}
            </span>
          }
        />
        <Stat label="Progress" value={`${total} / ${trial.maxSamples}`} />
      </div>
      <table className="table compact" data-testid="tuner-trial-arms">
        <thead>
          <tr>
            <th>Arm</th>
            <th className="num">Share</th>
            <th className="num">Samples</th>
            <th className="num">Routed differently</th>
            <th className="num">p95 TTFT</th>
            <th>95 % interval</th>
          </tr>
        </thead>
        <tbody>
          {(["incumbent", "candidate"] as const).map((arm) => (
            <tr key={arm} data-testid={`tuner-trial-arm-${arm}`}>
              <td>{arm}</td>
              <td className="num">{Math.round((arm === "candidate" ? trial.share : 1 - trial.share) * 100)} %</td>
              <td className="num">{trial.samples[arm]}</td>
              <td className="num">{trial.triggered[arm]}</td>
              <td className="num">{trial.p95TtftMs ? fmtMs(trial.p95TtftMs[arm]) : "–"}</td>
              <td>{trial.p95Interval ? interval(trial.p95Interval[arm]) : "first look pending"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <ArmBars trial={trial} />
      <p className="muted small" data-testid="tuner-trial-evidence">
        {trial.looks === 0
          ? "No look yet: the first comes after the first samples of both arms."
          : `Look ${trial.looks}: p = ${fmtP(trial.pBetter)} that the candidate's p95 is no lower; it is accepted only at p ≤ ${fmtP(trial.alphaAtLook)} (this look's share of α).`}
      </p>
      {last ? (
        <p data-testid="tuner-trial-last">
          Last decision (step {last.step}): <Badge tone={last.accepted ? "ok" : "neutral"}>{last.decision}</Badge> <span className="muted">{last.reason}</span>
        </p>
      ) : null}
    </div>
  );
}
