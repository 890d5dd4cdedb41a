"use client";
// An LB's request limits (LbConfig.limits): each field shows its value, or the protocol's default
// marked as such when not set. A blank field is "at its default"; Apply replaces the LB's whole set
// and the console pushes it as a new config version. The bounds are checked by the server with the
// protocol's own schema, whose message ("limits.maxBodyBytes: ...") is shown as is. A viewer sees
// the same values read-only (LbLimitsReadOnly). Below them, read-only for everyone, the LB's probes,
// index settings and sessionKeyBlocks (stored and adopted as the limits are; set through lbs.update
// `routingSettings`): the page has no editor for them yet.
import { useMutation } from "@tanstack/react-query";
import { Fragment, useState } from "react";
import type { RouterOutputs } from "../trpc/app-router";
import { useTRPC } from "../trpc/client";
import { ErrorText } from "./ui";
import { useInvalidateAll } from "./use-action";

type LimitsView = RouterOutputs["lbs"]["list"][number]["limits"];
type LimitKey = keyof LimitsView["defaults"];
type RoutingSettingsView = RouterOutputs["lbs"]["list"][number]["routingSettings"];

/** The fields' text: the stored value, or "" (at its default). */
function draftOf(view: LimitsView): Record<string, string> {
  return Object.fromEntries(Object.keys(view.defaults).map((key) => [key, view.set[key as LimitKey]?.toString() ?? ""]));
}

/** The limits to send, or the first field that is not a whole number. */
function parseDraft(draft: Record<string, string>): { limits: Partial<Record<LimitKey, number>> } | { error: string } {
  const limits: Partial<Record<LimitKey, number>> = {};
  for (const [key, text] of Object.entries(draft)) {
    const trimmed = text.trim();
    if (trimmed === "") continue;
    const value = Number(trimmed);
    if (!Number.isSafeInteger(value)) return { error: `limits.${key}: expected a whole number (leave it blank for the default)` };
    limits[key as LimitKey] = value;
  }
  return { limits };
}

/** The collapsed line: how many limits are set, or that the console has not read the LB's yet. */
function limitsSummary(view: LimitsView): string {
  const setCount = Object.keys(view.set).length;
  return `Limits ${view.stored ? `(${setCount === 0 ? "all defaults" : `${setCount} set`})` : "(not adopted yet)"}`;
}

/** The routing settings as rows ("probes.rttIntervalMs"), each the stored value or the default. */
function routingRows(view: RoutingSettingsView): Array<{ key: string; value: number | undefined; fallback: number }> {
  const { defaults, set } = view;
  return [
    ...Object.entries(defaults.probes).map(([key, fallback]) => ({ key: `probes.${key}`, value: set.probes?.[key as keyof typeof defaults.probes], fallback })),
    ...Object.entries(defaults.index).map(([key, fallback]) => ({ key: `index.${key}`, value: set.index?.[key as keyof typeof defaults.index], fallback })),
    { key: "sessionKeyBlocks", value: set.sessionKeyBlocks, fallback: defaults.sessionKeyBlocks },
  ];
}

function RoutingSettingsList({ lb }: { lb: { name: string; routingSettings: RoutingSettingsView } }) {
  return (
    <>
      <p className="muted small">Routing settings (read-only here)</p>
      <dl className="kv" data-testid={`lb-routing-settings-${lb.name}`}>
        {routingRows(lb.routingSettings).map(({ key, value, fallback }) => (
          <Fragment key={key}>
            <dt>{key}</dt>
            <dd data-testid={`lb-routing-value-${lb.name}-${key}`}>{value ?? <span className="muted">{fallback} (default)</span>}</dd>
          </Fragment>
        ))}
      </dl>
    </>
  );
}

/** The limits as a viewer sees them: each value, or the default it runs at. */
export function LbLimitsReadOnly({ lb }: { lb: { name: string; limits: LimitsView; routingSettings: RoutingSettingsView } }) {
  return (
    <details className="lb-limits" data-testid={`lb-limits-${lb.name}`}>
      <summary>{limitsSummary(lb.limits)}</summary>
      <dl className="kv" data-testid={`lb-limits-values-${lb.name}`}>
        {Object.entries(lb.limits.defaults).map(([key, fallback]) => {
          const value = lb.limits.set[key as LimitKey];
          return (
            <Fragment key={key}>
              <dt>{key}</dt>
              <dd data-testid={`lb-limit-value-${lb.name}-${key}`}>{value ?? <span className="muted">{fallback} (default)</span>}</dd>
            </Fragment>
          );
        })}
      </dl>
      <RoutingSettingsList lb={lb} />
    </details>
  );
}

export function LbLimitsEditor({ lb }: { lb: { id: string; name: string; limits: LimitsView; routingSettings: RoutingSettingsView } }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const [draft, setDraft] = useState(() => draftOf(lb.limits));
  const [localError, setLocalError] = useState<string | null>(null);
  const update = useMutation(trpc.lbs.update.mutationOptions({ onSuccess: invalidateAll }));
  const apply = () => {
    const parsed = parseDraft(draft);
    if ("error" in parsed) {
      setLocalError(parsed.error);
      return;
    }
    setLocalError(null);
    update.mutate({ id: lb.id, limits: parsed.limits });
  };
  return (
    <details className="lb-limits" data-testid={`lb-limits-${lb.name}`}>
      <summary>{limitsSummary(lb.limits)}</summary>
      {lb.limits.stored ? null : (
        <p className="muted small" data-testid={`lb-limits-pending-${lb.name}`}>
          The console has not read this LB&apos;s running limits yet: it adopts them once the LB answers with its token. Until then, a push carries the defaults
          below. Set them here to push your own instead.
        </p>
      )}
      <div className="form-grid">
        {Object.entries(lb.limits.defaults).map(([key, fallback]) => (
          <label key={key}>
            {key}
            <input
              type="text"
              inputMode="numeric"
              value={draft[key] ?? ""}
              placeholder={`${fallback} (default)`}
              onChange={(e) => setDraft({ ...draft, [key]: e.target.value })}
              data-testid={`lb-limit-${lb.name}-${key}`}
            />
          </label>
        ))}
      </div>
      <button type="button" className="btn btn-small btn-primary" disabled={update.isPending} onClick={apply} data-testid={`lb-limits-apply-${lb.name}`}>
        Apply limits
      </button>
      {localError ? (
        <div className="error-text" role="alert" data-testid={`lb-limits-error-${lb.name}`}>
          {localError}
        </div>
      ) : (
        <ErrorText error={update.error} testId={`lb-limits-error-${lb.name}`} />
      )}
      <RoutingSettingsList lb={lb} />
    </details>
  );
}
