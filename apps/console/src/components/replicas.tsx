"use client";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import type { RouterOutputs } from "../trpc/app-router";
import { useTRPC } from "../trpc/client";
import { LIVE_INTERVAL_MS } from "../trpc/query-client";
import { ENGINE_KINDS } from "@meridian/routing/types";
import { fmtNum, fmtPct } from "../lib/format";
import { hasCacheReports, hasShares } from "../lib/series";
import { REPLICA_STATS_WINDOW_MS, STATS_BUCKET_MS, windowLabel } from "../lib/stats-windows";
import { CacheTruthCharts, ShareHistoryChart } from "./charts";
import { useCanMutate } from "./session";
import {
  AddFormActions,
  Badge,
  ConfirmButton,
  ErrorText,
  HealthBadge,
  PageHeader,
  Panel,
  QueryView,
  ReadOnlyNote,
  RegionSelect,
  ShareBar,
  StateBadge,
} from "./ui";
import { ReplicaCapacityEditor, ReplicaCapacityReadOnly } from "./replica-capacity-editor";
import { useInvalidateAll } from "./use-action";

type ReplicaRow = RouterOutputs["replicas"]["list"][number];
type ReplicaState = ReplicaRow["state"];

const ENGINES = ENGINE_KINDS;
type Engine = (typeof ENGINES)[number];

function ReplicaActions({ replica }: { replica: ReplicaRow }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const setState = useMutation(trpc.replicas.setState.mutationOptions({ onSuccess: invalidateAll }));
  const remove = useMutation(trpc.replicas.delete.mutationOptions({ onSuccess: invalidateAll }));
  const busy = setState.isPending || remove.isPending;
  const to = (state: ReplicaState) => setState.mutate({ id: replica.id, state });

  // Only the transitions that apply to the current state, so the column stays narrow.
  return (
    <div className="row-actions nowrap">
      {replica.state !== "enabled" ? (
        <button
          type="button"
          className="btn btn-small btn-primary"
          disabled={busy}
          onClick={() => to("enabled")}
          data-testid={`replica-enable-${replica.name}`}
        >
          Enable
        </button>
      ) : null}
      {replica.state !== "draining" ? (
        <button type="button" className="btn btn-small btn-warn" disabled={busy} onClick={() => to("draining")} data-testid={`replica-drain-${replica.name}`}>
          Drain
        </button>
      ) : null}
      {replica.state !== "disabled" ? (
        <button type="button" className="btn btn-small" disabled={busy} onClick={() => to("disabled")} data-testid={`replica-disable-${replica.name}`}>
          Disable
        </button>
      ) : null}
      <ConfirmButton label="Delete" disabled={busy} onConfirm={() => remove.mutate({ id: replica.id })} testId={`replica-delete-${replica.name}`} />
      <ErrorText error={setState.error ?? remove.error} testId={`replica-error-${replica.name}`} />
    </div>
  );
}

function AddReplicaForm({ onDone }: { onDone: () => void }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const regions = useQuery(trpc.regions.list.queryOptions());
  const lbs = useQuery(trpc.lbs.list.queryOptions());
  const [form, setForm] = useState({ name: "", url: "", region: "", engine: "sglang" as Engine, model: "", homeLbId: "" });
  const create = useMutation(
    trpc.replicas.create.mutationOptions({
      onSuccess: async () => {
        await invalidateAll();
        onDone();
      },
    }),
  );
  const set = (k: keyof typeof form) => (e: { target: { value: string } }) => setForm((f) => ({ ...f, [k]: e.target.value }));
  // Default the home LB to the one in the chosen region: replicas are normally owned by their region's LB.
  const lbsInRegion = (lbs.data ?? []).filter((lb) => !form.region || lb.region === form.region);
  // The server writes the region's default home into the replica; name it so the choice is visible.
  const defaultHomeId = (regions.data ?? []).find((r) => r.name === form.region)?.defaultHomeLbId ?? null;
  const defaultHomeName = defaultHomeId === null ? null : ((lbs.data ?? []).find((lb) => lb.id === defaultHomeId)?.name ?? defaultHomeId);
  const defaultLabel = !form.region ? "default (region's LB)" : defaultHomeName ? `default: ${defaultHomeName}` : "default: none (no LB in region yet)";

  function submit(e: FormEvent) {
    e.preventDefault();
    const { homeLbId, ...rest } = form;
    // No explicit choice, or one that is not an LB of the region (the server refuses those): the
    // server homes the replica on its region's LB.
    const home = lbsInRegion.some((lb) => lb.id === homeLbId) ? homeLbId : "";
    create.mutate({ ...rest, ...(home ? { homeLbId: home } : {}) });
  }

  return (
    <form className="form-grid" onSubmit={submit} data-testid="replica-add-form">
      <label>
        Name
        <input value={form.name} onChange={set("name")} required placeholder="use1-vllm-3" data-testid="replica-add-name" />
      </label>
      <label>
        URL
        <input value={form.url} onChange={set("url")} required placeholder="http://10.0.0.5:8000" data-testid="replica-add-url" />
      </label>
      <RegionSelect
        regions={regions.data}
        value={form.region}
        // The home LB picked belongs to the old region: back to the new region's default.
        onChange={(e) => setForm((f) => ({ ...f, region: e.target.value, homeLbId: "" }))}
        testId="replica-add-region"
      />
      <label>
        Engine
        <select value={form.engine} onChange={(e) => setForm((f) => ({ ...f, engine: e.target.value as Engine }))} data-testid="replica-add-engine">
          {ENGINES.map((e) => (
            <option key={e} value={e}>
              {e}
            </option>
          ))}
        </select>
      </label>
      <label>
        Model
        <input value={form.model} onChange={set("model")} required placeholder="meta-llama/Llama-3.1-8B-Instruct" data-testid="replica-add-model" />
      </label>
      <label>
        Home LB
        <select value={form.homeLbId} onChange={set("homeLbId")} data-testid="replica-add-home-lb">
          <option value="">{defaultLabel}</option>
          {lbsInRegion.map((lb) => (
            <option key={lb.id} value={lb.id}>
              {lb.name}
            </option>
          ))}
        </select>
      </label>
      <AddFormActions
        label="Add replica"
        pending={create.isPending}
        onCancel={onDone}
        error={create.error ?? regions.error ?? lbs.error}
        testId="replica-add"
      />
    </form>
  );
}

export function ReplicasPage() {
  const trpc = useTRPC();
  const canMutate = useCanMutate();
  const [adding, setAdding] = useState(false);
  const replicas = useQuery({ ...trpc.replicas.list.queryOptions(), refetchInterval: LIVE_INTERVAL_MS });
  const history = useQuery({ ...trpc.replicas.shareHistory.queryOptions(), refetchInterval: LIVE_INTERVAL_MS });
  const window = windowLabel(REPLICA_STATS_WINDOW_MS);
  const cacheHistory = useQuery({ ...trpc.replicas.cacheHistory.queryOptions(), refetchInterval: LIVE_INTERVAL_MS });

  return (
    <div data-testid="page-replicas">
      <PageHeader title="Replicas" subtitle="Inference engines, where traffic and cache concentrate.">
        {canMutate ? (
          <button type="button" className="btn btn-primary" onClick={() => setAdding((a) => !a)} data-testid="replica-add-toggle">
            {adding ? "Close" : "Add replica"}
          </button>
        ) : null}
      </PageHeader>
      {!canMutate ? <ReadOnlyNote /> : null}
      {adding && canMutate ? (
        <Panel title="Add replica">
          <AddReplicaForm onDone={() => setAdding(false)} />
        </Panel>
      ) : null}
      <ReplicaWarnings rows={replicas.data ?? []} />
      <Panel title="Fleet">
        <QueryView query={replicas} isEmpty={(d) => d.length === 0} empty="No replicas registered.">
          {(rows) => (
            <div className="table-wrap">
              <table className="table" data-testid="replica-table">
                <thead>
                  <tr>
                    <th>Replica</th>
                    <th>Region / home LB</th>
                    <th>Engine</th>
                    <th>Status</th>
                    <th className="num">In-flight</th>
                    <th className="num">Queued tok</th>
                    <th
                      title={`Share of the requests routed over the last ${window}: a trailing window, so a replica drained or disabled just now still shows what it served before`}
                    >
                      Share, last {window}
                    </th>
                    <th className="num" title={`Over the last ${window}`}>
                      Cache hit
                    </th>
                    <th className="num" title={`Over the last ${window}`}>
                      Pred. acc.
                    </th>
                    {canMutate ? <th>Actions</th> : <th>Capacity</th>}
                  </tr>
                </thead>
                <tbody>
                  {rows.map((r) => (
                    <tr key={r.id} data-testid={`replica-row-${r.name}`} data-replica-id={r.id}>
                      <td>
                        <div className="strong">
                          {r.name}
                          {r.warnings.length > 0 ? (
                            <>
                              {" "}
                              <Badge tone="warn" testId={`replica-warning-${r.name}`}>
                                check setup
                              </Badge>
                            </>
                          ) : null}
                        </div>
                        <div className="muted mono small">{r.url}</div>
                      </td>
                      <td className="nowrap">
                        <div>{r.region}</div>
                        <div className="muted small">
                          <span
                            data-testid={`replica-home-${r.name}`}
                            title={r.homeLbId === null ? "no LB in its region yet; the first LB created there takes it" : undefined}
                          >
                            {r.homeLbName ?? r.homeLbId ?? "no home LB"}
                          </span>
                          {r.rehomed ? (
                            <>
                              {" "}
                              <Badge tone="warn">re-homed</Badge>
                            </>
                          ) : null}
                        </div>
                      </td>
                      <td className="nowrap" title={r.model}>
                        {r.engine}
                      </td>
                      <td>
                        <div className="badges">
                          <StateBadge state={r.state} testId={`replica-state-${r.name}`} />
                          <HealthBadge healthy={r.healthy} testId={`replica-health-${r.name}`} />
                        </div>
                      </td>
                      <td className="num" data-testid={`replica-inflight-${r.name}`}>
                        {fmtNum(r.inFlight)}
                      </td>
                      <td className="num">{fmtNum(r.queuedTokens)}</td>
                      <td className="share-cell">
                        <ShareBar fraction={r.share} testId={`replica-share-${r.name}`} muted={r.state !== "enabled"} />
                        {r.state !== "enabled" ? (
                          <div className="muted small" data-testid={`replica-share-note-${r.name}`}>
                            {r.state}: no new requests
                          </div>
                        ) : null}
                      </td>
                      <td className="num">{fmtPct(r.cacheHitRate)}</td>
                      <td className="num nowrap" data-testid={`replica-index-${r.name}`} data-index-status={r.index.kind} title={r.index.detail ?? undefined}>
                        {fmtPct(r.predictionAccuracy)} <IndexBadge kind={r.index.kind} />
                      </td>
                      {canMutate ? (
                        <td>
                          <ReplicaActions replica={r} />
                          <ReplicaCapacityEditor key={`${r.maxConcurrency}:${r.cacheCapacityTokens}`} replica={r} />
                        </td>
                      ) : (
                        <td>
                          <ReplicaCapacityReadOnly replica={r} />
                        </td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </QueryView>
      </Panel>
      <Panel title="Share of requests over time">
        <p className="muted small">
          Each band is one replica&apos;s share of the requests routed in each {windowLabel(STATS_BUCKET_MS)} bucket; the bands stack to 100%.
        </p>
        <QueryView query={history} isEmpty={(d) => !hasShares(d)} empty="No traffic recorded yet.">
          {(h) => <ShareHistoryChart history={h} replicas={(replicas.data ?? []).map((r) => ({ id: r.id, name: r.name }))} />}
        </QueryView>
      </Panel>
      <Panel title="Cached tokens: predicted by the LB vs reported by the engine">
        <QueryView query={cacheHistory} isEmpty={(d) => !hasCacheReports(d)} empty="No cached-token reports yet.">
          {(h) => <CacheTruthCharts history={h} replicas={(replicas.data ?? []).map((r) => ({ id: r.id, name: r.name }))} />}
        </QueryView>
      </Panel>
    </div>
  );
}

/** The LB index's status for a replica, shown only when it needs attention (the title has the detail). */
function IndexBadge({ kind }: { kind: ReplicaRow["index"]["kind"] }) {
  switch (kind) {
    case "cleared":
      return <Badge tone="bad">cleared</Badge>;
    case "collapsed":
      return <Badge tone="bad">collapsed</Badge>;
    case "drifting":
      return <Badge tone="warn">drifting</Badge>;
    case "no-cache-reports":
      return <Badge tone="warn">no reports</Badge>;
    default:
      return null;
  }
}

/** Replicas that joined in a way that will surprise the operator (no RTT emulation, a model its LB's
 * clients do not ask for); the server explains each (src/server/runtime/replica-warnings.ts). */
function ReplicaWarnings({ rows }: { rows: { name: string; warnings: { kind: string; message: string }[] }[] }) {
  const flagged = rows.filter((r) => r.warnings.length > 0);
  if (flagged.length === 0) return null;
  return (
    <Panel title="Needs attention">
      <ul className="plain-list" data-testid="replica-warnings">
        {flagged.flatMap((r) =>
          r.warnings.map((w) => (
            <li key={`${r.name}-${w.kind}`} data-testid={`replica-warning-${r.name}-${w.kind}`}>
              <Badge tone="warn">{r.name}</Badge> {w.message}
            </li>
          )),
        )}
      </ul>
    </Panel>
  );
}
