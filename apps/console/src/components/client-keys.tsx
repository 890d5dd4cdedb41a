"use client";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import type { RouterOutputs } from "../trpc/app-router";
import { useTRPC } from "../trpc/client";
import { LIVE_INTERVAL_MS } from "../trpc/query-client";
import { fmtDateTime } from "../lib/format";
import { SecretOnce } from "./secret-once";
import { useCanMutate } from "./session";
import { Badge, ConfirmButton, ErrorText, PageHeader, Panel, QueryView, ReadOnlyNote } from "./ui";
import { useInvalidateAll } from "./use-action";

type Listing = RouterOutputs["clientKeys"]["list"];

function RequireToggle({ region }: { region: Listing["regions"][number] }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const set = useMutation(trpc.clientKeys.setRequired.mutationOptions({ onSuccess: invalidateAll }));
  return (
    <>
      <button
        type="button"
        className={`btn btn-small${region.required ? "" : " btn-primary"}`}
        disabled={set.isPending}
        onClick={() => set.mutate({ region: region.name, required: !region.required })}
        data-testid={`keys-require-${region.name}`}
      >
        {region.required ? "Stop requiring keys" : "Require keys"}
      </button>
      <ErrorText error={set.error} testId={`keys-require-error-${region.name}`} />
    </>
  );
}

function CreateKeyForm({ regions }: { regions: Listing["regions"] }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const [region, setRegion] = useState("");
  const [name, setName] = useState("");
  const [created, setCreated] = useState<{ key: string; name: string; region: string } | null>(null);
  const create = useMutation(
    trpc.clientKeys.create.mutationOptions({
      onSuccess: async (result) => {
        setCreated({ key: result.key, name: result.name, region: result.region });
        setName("");
        await invalidateAll();
      },
    }),
  );
  function submit(e: FormEvent) {
    e.preventDefault();
    create.mutate({ region, name });
  }
  return (
    <>
      {created ? (
        <SecretOnce title={`Key "${created.name}" for ${created.region}`} secret={created.key} onDone={() => setCreated(null)} testId="key-created">
          Give it to the client: the <span className="mono">openai</span> SDKs send it as <span className="mono">Authorization: Bearer</span>. It also reads{" "}
          <span className="mono">/api/entrypoints</span>.
        </SecretOnce>
      ) : null}
      <form className="inline-form" onSubmit={submit} data-testid="key-create-form">
        <select value={region} onChange={(e) => setRegion(e.target.value)} required aria-label="Region of the key" data-testid="key-create-region">
          <option value="">region…</option>
          {regions.map((r) => (
            <option key={r.name} value={r.name}>
              {r.name}
            </option>
          ))}
        </select>
        <input
          value={name}
          onChange={(e) => setName(e.target.value)}
          required
          maxLength={64}
          aria-label="Key name"
          placeholder="team-a"
          data-testid="key-create-name"
        />
        <button type="submit" className="btn btn-primary" disabled={create.isPending} data-testid="key-create-submit">
          Create key
        </button>
        <ErrorText error={create.error} testId="key-create-error" />
      </form>
    </>
  );
}

function RevokeButton({ id, name }: { id: string; name: string }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const revoke = useMutation(trpc.clientKeys.revoke.mutationOptions({ onSuccess: invalidateAll }));
  return (
    <>
      <ConfirmButton label="Revoke" disabled={revoke.isPending} onConfirm={() => revoke.mutate({ id })} testId={`key-revoke-${name}`} />
      <ErrorText error={revoke.error} testId={`key-revoke-error-${name}`} />
    </>
  );
}

export function ClientKeysPage() {
  const trpc = useTRPC();
  const canMutate = useCanMutate();
  const listing = useQuery({ ...trpc.clientKeys.list.queryOptions(), refetchInterval: LIVE_INTERVAL_MS });
  return (
    <div data-testid="page-keys">
      <PageHeader
        title="API keys"
        subtitle="Client API keys per region. The region's LBs (and an LB that takes over its entrypoint) accept them; with keys required, a request without one gets 401."
      />
      {!canMutate ? <ReadOnlyNote /> : null}
      <QueryView query={listing}>
        {(data) => (
          <>
            <Panel title="Regions">
              <table className="table compact" data-testid="keys-regions">
                <thead>
                  <tr>
                    <th>Region</th>
                    <th>Keys</th>
                    <th>Active keys</th>
                    {canMutate ? <th /> : null}
                  </tr>
                </thead>
                <tbody>
                  {data.regions.map((region) => (
                    <tr key={region.name} data-testid={`keys-region-${region.name}`} data-required={String(region.required)}>
                      <td>{region.name}</td>
                      <td>
                        <Badge tone={region.required ? "info" : "neutral"}>{region.required ? "required" : "optional"}</Badge>
                      </td>
                      <td className="num">{region.activeKeys}</td>
                      {canMutate ? (
                        <td>
                          <RequireToggle region={region} />
                        </td>
                      ) : null}
                    </tr>
                  ))}
                </tbody>
              </table>
            </Panel>
            <Panel title="Keys">
              {canMutate ? <CreateKeyForm regions={data.regions} /> : null}
              {data.keys.length === 0 ? (
                <p className="muted">No client keys yet.</p>
              ) : (
                <table className="table" data-testid="keys-table">
                  <thead>
                    <tr>
                      <th>Name</th>
                      <th>Id</th>
                      <th>Region</th>
                      <th>Created</th>
                      <th>Status</th>
                      {canMutate ? <th /> : null}
                    </tr>
                  </thead>
                  <tbody>
                    {data.keys.map((key) => (
                      <tr key={key.id} data-testid={`key-row-${key.name}`} data-key-id={key.id} data-revoked={String(key.revokedAt !== null)}>
                        <td>{key.name}</td>
                        <td className="mono">{key.id}</td>
                        <td>{key.region}</td>
                        <td className="small">
                          {fmtDateTime(key.createdAt)} by {key.createdBy}
                        </td>
                        <td>
                          {key.revokedAt !== null ? (
                            <Badge tone="bad">
                              revoked {fmtDateTime(key.revokedAt)} by {key.revokedBy}
                            </Badge>
                          ) : (
                            <Badge tone="ok">active</Badge>
                          )}
                        </td>
                        {canMutate ? <td>{key.revokedAt === null ? <RevokeButton id={key.id} name={key.name} /> : null}</td> : null}
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </Panel>
          </>
        )}
      </QueryView>
    </div>
  );
}
