"use client";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import type { RouterOutputs } from "../trpc/app-router";
import { useTRPC } from "../trpc/client";
import { LIVE_INTERVAL_MS } from "../trpc/query-client";
import { fmtMs } from "../lib/format";
import { useCanMutate } from "./session";
import { ConfirmButton, ErrorText, PageHeader, Panel, QueryView, ReadOnlyNote } from "./ui";
import { useInvalidateAll } from "./use-action";

type RegionRow = RouterOutputs["regions"]["list"][number];

function CreateRegionForm() {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const [name, setName] = useState("");
  const [displayName, setDisplayName] = useState("");
  const create = useMutation(
    trpc.regions.create.mutationOptions({
      onSuccess: async () => {
        setName("");
        setDisplayName("");
        await invalidateAll();
      },
    }),
  );
  function submit(e: FormEvent) {
    e.preventDefault();
    create.mutate({ name: name.trim(), ...(displayName.trim() ? { displayName: displayName.trim() } : {}) });
  }
  return (
    <form className="inline-form" onSubmit={submit} data-testid="region-create-form">
      <input
        value={name}
        onChange={(e) => setName(e.target.value)}
        aria-label="Region name"
        placeholder="name, e.g. us-west"
        required
        data-testid="region-create-name"
      />
      <input
        value={displayName}
        onChange={(e) => setDisplayName(e.target.value)}
        aria-label="Display name (optional)"
        placeholder="display name (optional)"
        data-testid="region-create-display"
      />
      <button type="submit" className="btn btn-primary btn-solid" disabled={create.isPending} data-testid="region-create-submit">
        Create region
      </button>
      <ErrorText error={create.error} testId="region-create-error" />
    </form>
  );
}

function RegionRowView({ region, canMutate }: { region: RegionRow; canMutate: boolean }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const [editing, setEditing] = useState(false);
  // Taken from the region when Edit is clicked: the row outlives renames (its own, another console's).
  const [displayName, setDisplayName] = useState("");
  const update = useMutation(
    trpc.regions.update.mutationOptions({
      onSuccess: async () => {
        setEditing(false);
        await invalidateAll();
      },
    }),
  );
  const remove = useMutation(trpc.regions.delete.mutationOptions({ onSuccess: invalidateAll }));
  return (
    <tr data-testid={`region-row-${region.name}`}>
      <td className="strong mono">{region.name}</td>
      <td>
        {editing ? (
          <form
            className="inline-form"
            onSubmit={(e) => {
              e.preventDefault();
              // A cleared name is "no display name" (null, shown as the dash), not an empty string.
              update.mutate({ id: region.id, displayName: displayName.trim() || null });
            }}
          >
            <input
              value={displayName}
              onChange={(e) => setDisplayName(e.target.value)}
              aria-label={`Display name of ${region.name}`}
              data-testid={`region-edit-display-${region.name}`}
            />
            <button type="submit" className="btn btn-small btn-primary" disabled={update.isPending} data-testid={`region-edit-save-${region.name}`}>
              Save
            </button>
            <button
              type="button"
              className="btn btn-small"
              onClick={() => {
                setEditing(false);
                update.reset();
              }}
              data-testid={`region-edit-cancel-${region.name}`}
            >
              Cancel
            </button>
          </form>
        ) : (
          (region.displayName ?? <span className="muted">—</span>)
        )}
      </td>
      {canMutate ? (
        <td>
          <div className="row-actions">
            {!editing ? (
              <button
                type="button"
                className="btn btn-small"
                onClick={() => {
                  setDisplayName(region.displayName ?? "");
                  update.reset();
                  setEditing(true);
                }}
                data-testid={`region-edit-${region.name}`}
              >
                Edit
              </button>
            ) : null}
            <ConfirmButton
              label="Delete"
              disabled={remove.isPending}
              onConfirm={() => remove.mutate({ id: region.id })}
              testId={`region-delete-${region.name}`}
            />
            <ErrorText error={update.error ?? remove.error} testId={`region-error-${region.name}`} />
          </div>
        </td>
      ) : null}
    </tr>
  );
}

/** Colour an RTT cell by magnitude so the matrix reads at a glance: local, continental, intercontinental. */
function rttTone(ms: number | null): string {
  if (ms == null) return "";
  if (ms < 50) return "rtt-near";
  if (ms < 200) return "rtt-mid";
  return "rtt-far";
}

export function RegionsPage() {
  const trpc = useTRPC();
  const canMutate = useCanMutate();
  const regions = useQuery({ ...trpc.regions.list.queryOptions(), refetchInterval: LIVE_INTERVAL_MS });
  const matrix = useQuery({ ...trpc.regions.rttMatrix.queryOptions(), refetchInterval: LIVE_INTERVAL_MS });
  return (
    <div data-testid="page-regions">
      <PageHeader title="Regions" subtitle="Where load balancers and replicas live, and the RTT observed between them." />
      {!canMutate ? <ReadOnlyNote /> : null}
      {canMutate ? (
        <Panel title="New region">
          <CreateRegionForm />
        </Panel>
      ) : null}
      <Panel title="Regions">
        <QueryView query={regions} isEmpty={(d) => d.length === 0} empty="No regions yet.">
          {(rows) => (
            <table className="table" data-testid="region-table">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Display name</th>
                  {canMutate ? <th>Actions</th> : null}
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <RegionRowView key={r.id} region={r} canMutate={canMutate} />
                ))}
              </tbody>
            </table>
          )}
        </QueryView>
      </Panel>
      <Panel title="Observed RTT (row: from, column: to)">
        <QueryView query={matrix} isEmpty={(d) => d.regions.length === 0} empty="No RTT observed yet.">
          {(m) => (
            <table className="table matrix" data-testid="rtt-matrix">
              <thead>
                <tr>
                  <th>from \ to</th>
                  {m.regions.map((r) => (
                    <th key={r} className="num">
                      {r}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {m.regions.map((from, i) => (
                  <tr key={from}>
                    <th>{from}</th>
                    {m.regions.map((to, j) => {
                      const ms = m.rttMs[i]?.[j] ?? null;
                      return (
                        <td key={to} className={`num ${rttTone(ms)}`} data-testid={`rtt-${from}-${to}`}>
                          {fmtMs(ms)}
                        </td>
                      );
                    })}
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </QueryView>
      </Panel>
    </div>
  );
}
