"use client";
// A replica's capacity settings the console pushes to its LBs: maxConcurrency (requests an LB may
// have in flight on it) and cacheCapacityTokens (KV tokens its prefix cache holds; 0 = none). Blank
// = not set: each LB learns the value from the engine. The server checks the protocol's bounds. A
// viewer sees the same values read-only (ReplicaCapacityReadOnly).
import { useMutation } from "@tanstack/react-query";
import { Fragment, useState } from "react";
import { useTRPC } from "../trpc/client";
import { ErrorText } from "./ui";
import { useInvalidateAll } from "./use-action";

type Field = "maxConcurrency" | "cacheCapacityTokens";
const FIELDS: { key: Field; label: string }[] = [
  { key: "maxConcurrency", label: "Max concurrency" },
  { key: "cacheCapacityTokens", label: "Cache capacity (tokens)" },
];

type CapacityOf = { name: string } & Record<Field, number | null>;

/** The collapsed line: the values set, or that the LBs learn them from the engine. */
function capacitySummary(replica: CapacityOf): string {
  const set = FIELDS.filter(({ key }) => replica[key] !== null).map(({ key }) => `${key === "maxConcurrency" ? "max" : "cache"} ${replica[key]}`);
  return `Capacity ${set.length > 0 ? `(${set.join(", ")})` : "(from the engine)"}`;
}

/** The capacity as a viewer sees it: each value, or "from the engine". */
export function ReplicaCapacityReadOnly({ replica }: { replica: CapacityOf }) {
  return (
    <details className="replica-capacity" data-testid={`replica-capacity-${replica.name}`}>
      <summary>{capacitySummary(replica)}</summary>
      <dl className="kv">
        {FIELDS.map(({ key, label }) => (
          <Fragment key={key}>
            <dt>{label}</dt>
            <dd data-testid={`replica-${key}-value-${replica.name}`}>{replica[key] ?? <span className="muted">from the engine</span>}</dd>
          </Fragment>
        ))}
      </dl>
    </details>
  );
}

export function ReplicaCapacityEditor({ replica }: { replica: { id: string; name: string } & Record<Field, number | null> }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const [draft, setDraft] = useState<Record<Field, string>>({
    maxConcurrency: replica.maxConcurrency?.toString() ?? "",
    cacheCapacityTokens: replica.cacheCapacityTokens?.toString() ?? "",
  });
  const [localError, setLocalError] = useState<string | null>(null);
  const update = useMutation(trpc.replicas.update.mutationOptions({ onSuccess: invalidateAll }));
  const apply = () => {
    const values: Partial<Record<Field, number | null>> = {};
    for (const { key } of FIELDS) {
      const text = draft[key].trim();
      const value = text === "" ? null : Number(text);
      if (value !== null && !Number.isSafeInteger(value)) {
        setLocalError(`${key}: expected a whole number (leave it blank to learn it from the engine)`);
        return;
      }
      values[key] = value;
    }
    setLocalError(null);
    update.mutate({ id: replica.id, ...values });
  };
  return (
    <details className="replica-capacity" data-testid={`replica-capacity-${replica.name}`}>
      <summary>{capacitySummary(replica)}</summary>
      <div className="form-grid narrow">
        {FIELDS.map(({ key, label }) => (
          <label key={key}>
            {label}
            <input
              type="text"
              inputMode="numeric"
              value={draft[key]}
              placeholder="from the engine"
              onChange={(e) => setDraft({ ...draft, [key]: e.target.value })}
              data-testid={`replica-${key}-${replica.name}`}
            />
          </label>
        ))}
      </div>
      <button
        type="button"
        className="btn btn-small btn-primary"
        disabled={update.isPending}
        onClick={apply}
        data-testid={`replica-capacity-apply-${replica.name}`}
      >
        Apply
      </button>
      {localError ? (
        <div className="error-text" role="alert" data-testid={`replica-capacity-error-${replica.name}`}>
          {localError}
        </div>
      ) : (
        <ErrorText error={update.error} testId={`replica-capacity-error-${replica.name}`} />
      )}
    </details>
  );
}
