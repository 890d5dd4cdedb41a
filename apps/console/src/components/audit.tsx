"use client";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useDeferredValue, useState } from "react";
import { useTRPC } from "../trpc/client";
import { LIVE_INTERVAL_MS } from "../trpc/query-client";
import { fmtDateTime, fmtJson } from "../lib/format";
import { PageHeader, Panel, QueryView } from "./ui";

export function AuditPage() {
  const trpc = useTRPC();
  const [filters, setFilters] = useState({ actor: "", action: "", target: "" });
  // Deferred so typing in a filter does not fire a request per keystroke ahead of rendering.
  const deferred = useDeferredValue(filters);
  const input = {
    ...(deferred.actor ? { actor: deferred.actor } : {}),
    ...(deferred.action ? { action: deferred.action } : {}),
    ...(deferred.target ? { target: deferred.target } : {}),
    limit: 500,
  };
  const audit = useQuery({ ...trpc.audit.list.queryOptions(input), refetchInterval: LIVE_INTERVAL_MS, placeholderData: keepPreviousData });
  // Suggestions come from an unfiltered view, so narrowing one filter does not empty the others' lists.
  const all = useQuery({ ...trpc.audit.list.queryOptions({ limit: 500 }), refetchInterval: LIVE_INTERVAL_MS * 4 });
  const knownActors = [...new Set((all.data ?? []).map((r) => r.actor))].sort();
  const knownActions = [...new Set((all.data ?? []).map((r) => r.action))].sort();
  const set = (k: keyof typeof filters) => (e: { target: { value: string } }) => setFilters((f) => ({ ...f, [k]: e.target.value }));

  return (
    <div data-testid="page-audit">
      <PageHeader title="Audit" subtitle="Every operator action, newest first." />
      <Panel
        title="Actions"
        actions={
          <div className="inline-form">
            {/* The server matches actor exactly and action/target as prefixes; suggestions make that usable. */}
            <input
              aria-label="Filter by actor (exact)"
              placeholder="actor (exact)"
              list="audit-actors"
              value={filters.actor}
              onChange={set("actor")}
              data-testid="audit-filter-actor"
            />
            <input
              aria-label="Filter by action prefix"
              placeholder="action prefix, e.g. lb."
              list="audit-actions"
              value={filters.action}
              onChange={set("action")}
              data-testid="audit-filter-action"
            />
            <input
              aria-label="Filter by target prefix"
              placeholder="target prefix, e.g. replica:"
              value={filters.target}
              onChange={set("target")}
              data-testid="audit-filter-target"
            />
            <datalist id="audit-actors">
              {knownActors.map((a) => (
                <option key={a} value={a} />
              ))}
            </datalist>
            <datalist id="audit-actions">
              {knownActions.map((a) => (
                <option key={a} value={a} />
              ))}
            </datalist>
          </div>
        }
      >
        <QueryView query={audit} isEmpty={(d) => d.length === 0} empty="No actions match.">
          {(rows) => (
            <div className="table-wrap">
              <table className="table compact" data-testid="audit-table">
                <thead>
                  <tr>
                    <th>At</th>
                    <th>Actor</th>
                    <th>Action</th>
                    <th>Target</th>
                    <th>Before</th>
                    <th>After</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map((r) => (
                    <tr key={r.id} data-testid="audit-row" data-action={r.action}>
                      <td className="nowrap">{fmtDateTime(r.at)}</td>
                      <td>{r.actor}</td>
                      <td className="mono" data-testid="audit-action">
                        {r.action}
                      </td>
                      <td className="mono">{r.target}</td>
                      <td className="mono small json-cell" title={fmtJson(r.before)}>
                        {fmtJson(r.before)}
                      </td>
                      <td className="mono small json-cell" title={fmtJson(r.after)}>
                        {fmtJson(r.after)}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </QueryView>
      </Panel>
    </div>
  );
}
