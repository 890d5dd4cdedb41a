"use client";
// A replica's capacity settings the console pushes to its LBs: maxConcurrency (requests an LB may
// have in flight on it) and cacheCapacityTokens (KV tokens its prefix cache holds; 0 = none). Blank
// = not set: each LB learns the value from the engine. The server checks the protocol's bounds.
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "../trpc/client";
import { ErrorText } from "./ui";
import { useInvalidateAll } from "./use-action";

type Field = "maxConcurrency" | "cacheCapacityTokens";
const FIELDS: { key: Field; label: string }[] = [
  { key: "maxConcurrency", label: "Max concurrency" },
  { key: "cacheCapacityTokens", label: "Cache capacity (tokens)" },
];

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
  const summary = FIELDS.filter(({ key }) => replica[key] !== null).map(({ key }) => `${key === "maxConcurrency" ? "max" : "cache"} ${replica[key]}`);
  return (
    <details className="replica-capacity" data-testid={`replica-capacity-${replica.name}`}>
      <summary>Capacity {summary.length > 0 ? `(${summary.join(", ")})` : "(from the engine)"}</summary>
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
