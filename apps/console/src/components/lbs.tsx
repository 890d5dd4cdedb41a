"use client";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import type { RouterOutputs } from "../trpc/app-router";
import { useTRPC } from "../trpc/client";
import { LIVE_INTERVAL_MS } from "../trpc/query-client";
import { fmtClock, fmtWeight } from "../lib/format";
import { CROSS_REGION_OPTIONS, POLICY_OPTIONS, type CrossRegion, type Policy } from "../lib/policies";
import { LbTokenActions, LbTokenCell, LbTokenOnce } from "./lb-credentials";
import { LbLimitsEditor, LbLimitsReadOnly } from "./lb-limits-editor";
import { useCanMutate } from "./session";
import { EntrypointAlarms, EntrypointTable } from "./entrypoints";
import { AddFormActions, Badge, ConfirmButton, ErrorText, LbStatusBadge, MessageLine, PageHeader, Panel, QueryView, ReadOnlyNote, RegionSelect } from "./ui";
import { useInvalidateAll } from "./use-action";

type LbRow = RouterOutputs["lbs"]["list"][number];

function PolicyEditor({ lb }: { lb: LbRow }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const [policy, setPolicy] = useState<Policy>(lb.policy as Policy);
  const [crossRegion, setCrossRegion] = useState<CrossRegion>(lb.crossRegion === "via-peer" ? "via-peer" : "direct");
  const setPolicyMutation = useMutation(trpc.lbs.setPolicy.mutationOptions({ onSuccess: invalidateAll }));
  const dirty = policy !== lb.policy || crossRegion !== lb.crossRegion;
  return (
    <div className="inline-form">
      <select
        value={policy}
        onChange={(e) => setPolicy(e.target.value as Policy)}
        aria-label={`Policy of ${lb.name}`}
        data-testid={`lb-policy-select-${lb.name}`}
      >
        {POLICY_OPTIONS.map((p) => (
          <option key={p} value={p}>
            {p}
          </option>
        ))}
      </select>
      <select
        value={crossRegion}
        onChange={(e) => setCrossRegion(e.target.value as CrossRegion)}
        aria-label={`Cross-region routing of ${lb.name}`}
        data-testid={`lb-cross-select-${lb.name}`}
      >
        {CROSS_REGION_OPTIONS.map((c) => (
          <option key={c} value={c}>
            {c}
          </option>
        ))}
      </select>
      <button
        type="button"
        className="btn btn-small btn-primary"
        disabled={!dirty || setPolicyMutation.isPending}
        onClick={() => setPolicyMutation.mutate({ id: lb.id, policy, crossRegion })}
        data-testid={`lb-policy-apply-${lb.name}`}
      >
        Apply
      </button>
      <ErrorText error={setPolicyMutation.error} testId={`lb-policy-error-${lb.name}`} />
    </div>
  );
}

function FailoverActions({ lb }: { lb: LbRow }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const failover = useMutation(trpc.lbs.failover.mutationOptions({ onSuccess: invalidateAll }));
  const failback = useMutation(trpc.lbs.failback.mutationOptions({ onSuccess: invalidateAll }));
  const busy = failover.isPending || failback.isPending;
  return (
    <div className="row-actions action-line">
      {lb.failedOverTo ? (
        <button
          type="button"
          className="btn btn-small btn-primary"
          disabled={busy}
          onClick={() => failback.mutate({ id: lb.id })}
          data-testid={`lb-failback-${lb.name}`}
        >
          Fail back
        </button>
      ) : (
        <ConfirmButton label="Fail over" tone="warn" disabled={busy} onConfirm={() => failover.mutate({ id: lb.id })} testId={`lb-failover-${lb.name}`} />
      )}
      <DeleteLbButton lb={lb} />
      <ErrorText error={failover.error ?? failback.error} testId={`lb-failover-error-${lb.name}`} />
    </div>
  );
}

function AddLbForm({ onDone }: { onDone: () => void }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const regions = useQuery(trpc.regions.list.queryOptions());
  const [form, setForm] = useState({ name: "", url: "", adminUrl: "", region: "" });
  const [policy, setPolicy] = useState<Policy>("gorgo");
  const [crossRegion, setCrossRegion] = useState<CrossRegion>("direct");
  const [issued, setIssued] = useState<string | null>(null);
  const create = useMutation(
    trpc.lbs.create.mutationOptions({
      onSuccess: async (result) => {
        setIssued(result.token);
        await invalidateAll();
      },
    }),
  );
  if (issued) return <LbTokenOnce token={issued} onDone={onDone} testId="lb-add-token" />;
  const set = (k: keyof typeof form) => (e: { target: { value: string } }) => setForm((f) => ({ ...f, [k]: e.target.value }));
  function submit(e: FormEvent) {
    e.preventDefault();
    const { adminUrl, ...rest } = form;
    create.mutate({ ...rest, policy, crossRegion, ...(adminUrl.trim() ? { adminUrl: adminUrl.trim() } : {}) });
  }
  return (
    <form className="form-grid" onSubmit={submit} data-testid="lb-add-form">
      <label>
        Name
        <input value={form.name} onChange={set("name")} required placeholder="lb-us-west" data-testid="lb-add-name" />
      </label>
      <label>
        URL
        <input value={form.url} onChange={set("url")} required placeholder="http://10.0.1.2:8080" data-testid="lb-add-url" />
      </label>
      <label>
        Admin URL (optional)
        <input value={form.adminUrl} onChange={set("adminUrl")} placeholder="same as URL" data-testid="lb-add-admin-url" />
      </label>
      <RegionSelect regions={regions.data} value={form.region} onChange={set("region")} testId="lb-add-region" />
      <label>
        Policy
        <select value={policy} onChange={(e) => setPolicy(e.target.value as Policy)} data-testid="lb-add-policy">
          {POLICY_OPTIONS.map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
      </label>
      <label>
        Cross-region
        <select value={crossRegion} onChange={(e) => setCrossRegion(e.target.value as CrossRegion)} data-testid="lb-add-cross">
          {CROSS_REGION_OPTIONS.map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
        </select>
      </label>
      <AddFormActions label="Add load balancer" pending={create.isPending} onCancel={onDone} error={create.error ?? regions.error} testId="lb-add" />
    </form>
  );
}

function DeleteLbButton({ lb }: { lb: LbRow }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const remove = useMutation(trpc.lbs.delete.mutationOptions({ onSuccess: invalidateAll }));
  return (
    <>
      <ConfirmButton label="Delete" disabled={remove.isPending} onConfirm={() => remove.mutate({ id: lb.id })} testId={`lb-delete-${lb.name}`} />
      <ErrorText error={remove.error} testId={`lb-delete-error-${lb.name}`} />
    </>
  );
}

export function LbsPage() {
  const trpc = useTRPC();
  const canMutate = useCanMutate();
  const lbs = useQuery({ ...trpc.lbs.list.queryOptions(), refetchInterval: LIVE_INTERVAL_MS });
  const entrypoints = useQuery({ ...trpc.lbs.entrypoints.queryOptions(), refetchInterval: LIVE_INTERVAL_MS });
  const replicas = useQuery({ ...trpc.replicas.list.queryOptions(), refetchInterval: LIVE_INTERVAL_MS });
  const replicaNames = new Map((replicas.data ?? []).map((r) => [r.id, r.name]));
  const lbNames = new Map((lbs.data ?? []).map((lb) => [lb.id, lb.name]));
  const [adding, setAdding] = useState(false);

  return (
    <div data-testid="page-lbs">
      <PageHeader title="Load balancers" subtitle="Regional proxies: policy, weights, pushed config and failover.">
        {canMutate ? (
          <button type="button" className="btn btn-primary" onClick={() => setAdding((a) => !a)} data-testid="lb-add-toggle">
            {adding ? "Close" : "Add load balancer"}
          </button>
        ) : null}
      </PageHeader>
      {!canMutate ? <ReadOnlyNote /> : null}
      <EntrypointAlarms entrypoints={Object.values(entrypoints.data ?? {})} />
      {adding && canMutate ? (
        <Panel title="Add load balancer">
          <AddLbForm onDone={() => setAdding(false)} />
        </Panel>
      ) : null}
      <Panel title="Load balancers">
        <QueryView query={lbs} isEmpty={(d) => d.length === 0} empty="No load balancers registered.">
          {(rows) => (
            <div className="table-wrap">
              <table className="table" data-testid="lb-table">
                <thead>
                  <tr>
                    <th>LB</th>
                    <th>Region</th>
                    <th>Status</th>
                    <th>Policy</th>
                    <th className="num">W_rtt / W_queue</th>
                    <th>Config pushed / acked</th>
                    <th>Token</th>
                    <th>Owned replicas</th>
                    {canMutate ? <th>Actions</th> : <th>Limits</th>}
                  </tr>
                </thead>
                <tbody>
                  {rows.map((lb) => {
                    const inSync = lb.ackedVersion === lb.configVersion;
                    return (
                      <tr key={lb.id} id={lb.id} data-testid={`lb-row-${lb.name}`} data-lb-id={lb.id}>
                        <td>
                          <div className="strong">{lb.name}</div>
                          <div className="muted mono small">{lb.url}</div>
                        </td>
                        <td className="nowrap">{lb.region}</td>
                        <td>
                          <LbStatusBadge lb={lb} testId={`lb-state-${lb.name}`} />
                          {lb.failedOverTo ? (
                            <div className="muted small" data-testid={`lb-failed-over-to-${lb.name}`}>
                              → {lbNames.get(lb.failedOverTo) ?? lb.failedOverTo}
                            </div>
                          ) : null}
                          {lb.failedOverTo && lb.autoFailbackAt !== null ? (
                            <div className="muted small" data-testid={`lb-auto-failback-${lb.name}`}>
                              auto failback {fmtClock(lb.autoFailbackAt)}
                            </div>
                          ) : null}
                        </td>
                        <td>
                          <div className="mono" data-testid={`lb-policy-${lb.name}`}>
                            {lb.policy}
                          </div>
                          <div className="muted small">{lb.crossRegion}</div>
                        </td>
                        <td className="num mono">
                          {fmtWeight(lb.weights.rtt)} / {fmtWeight(lb.weights.queue)}
                        </td>
                        <td data-testid={`lb-version-${lb.name}`}>
                          <span className="nowrap">
                            v{lb.configVersion} / {lb.ackedVersion == null ? "—" : `v${lb.ackedVersion}`}{" "}
                            <Badge tone={inSync ? "ok" : lb.pushError ? "bad" : "warn"}>{inSync ? "in sync" : "pending"}</Badge>
                          </span>
                          {/* Why it stays pending: the LB's refusal (e.g. a limit its build does not know) or why the push did not reach it. */}
                          {!inSync && lb.pushError ? <MessageLine text={lb.pushError} prefix="push failed: " testId={`lb-push-error-${lb.name}`} /> : null}
                        </td>
                        <td>
                          <LbTokenCell lb={lb} />
                        </td>
                        <td data-testid={`lb-replicas-${lb.name}`}>
                          {lb.replicas.length === 0 ? (
                            <span className="muted">none</span>
                          ) : (
                            <div className="chips">
                              {lb.replicas.map((id) => (
                                <span key={id} className="chip">
                                  {replicaNames.get(id) ?? id}
                                </span>
                              ))}
                            </div>
                          )}
                        </td>
                        {canMutate ? (
                          <td>
                            <PolicyEditor key={`${lb.policy}:${lb.crossRegion}`} lb={lb} />
                            <LbLimitsEditor key={JSON.stringify(lb.limits.set)} lb={lb} />
                            <FailoverActions lb={lb} />
                            <LbTokenActions lb={lb} />
                          </td>
                        ) : (
                          <td>
                            <LbLimitsReadOnly lb={lb} />
                          </td>
                        )}
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )}
        </QueryView>
      </Panel>
      <Panel title="Entrypoint map" testId="entrypoint-panel">
        <p className="muted small">
          Clients resolve their region&apos;s entrypoint here. A failover moves it to the nearest healthy LB; while a region&apos;s LB is failed and not yet
          failed over, its clients go to the nearest healthy LB, never to the failed one.
        </p>
        <QueryView query={entrypoints} isEmpty={(d) => Object.keys(d).length === 0} empty="No entrypoints.">
          {(map) => <EntrypointTable entrypoints={Object.values(map)} lbNames={lbNames} />}
        </QueryView>
      </Panel>
    </div>
  );
}
