"use client";
import type { UseQueryResult } from "@tanstack/react-query";
import { useEffect, useRef, useState, type KeyboardEvent, type ReactNode } from "react";
import { errorMessage } from "../lib/errors";
import { fmtPct } from "../lib/format";

export function PageHeader({ title, subtitle, children }: { title: string; subtitle?: string; children?: ReactNode }) {
  return (
    <header className="page-header">
      <div>
        <h1>{title}</h1>
        {subtitle ? <p className="muted">{subtitle}</p> : null}
      </div>
      {children ? <div className="page-header-actions">{children}</div> : null}
    </header>
  );
}

export function Panel({
  title,
  actions,
  children,
  testId,
  className,
}: {
  title?: ReactNode;
  actions?: ReactNode;
  children: ReactNode;
  testId?: string;
  className?: string;
}) {
  return (
    <section className={`panel ${className ?? ""}`} data-testid={testId}>
      {title || actions ? (
        <div className="panel-head">
          {title ? <h2>{title}</h2> : <span />}
          {actions ? <div className="panel-actions">{actions}</div> : null}
        </div>
      ) : null}
      <div className="panel-body">{children}</div>
    </section>
  );
}

function Loading({ label = "Loading…" }: { label?: string }) {
  return (
    <div className="state state-loading" data-testid="state-loading">
      {label}
    </div>
  );
}

function Empty({ children }: { children: ReactNode }) {
  return (
    <div className="state state-empty" data-testid="state-empty">
      {children}
    </div>
  );
}

/** An error an LB or the console reported, cut to fit a table cell (the element's title holds it whole). */
export function MessageLine({ text, prefix, testId }: { text: string; prefix?: string | null; testId?: string }) {
  return (
    <div className="muted small" title={text} data-testid={testId}>
      {prefix}
      {text.length > 80 ? `${text.slice(0, 80)}…` : text}
    </div>
  );
}

export function ErrorText({ error, testId }: { error: unknown; testId?: string }) {
  if (!error) return null;
  return (
    <div className="error-text" role="alert" data-testid={testId ?? "error-text"}>
      {errorMessage(error)}
    </div>
  );
}

/**
 * Renders a query's loading, error and empty states uniformly. Once data has arrived, a failed
 * background refetch keeps showing the last data with a stale banner instead of blanking the page.
 */
export function QueryView<T>({
  query,
  isEmpty,
  empty,
  children,
}: {
  query: UseQueryResult<T, unknown>;
  isEmpty?: (data: T) => boolean;
  empty?: ReactNode;
  children: (data: T) => ReactNode;
}) {
  if (query.isPending) return <Loading />;
  if (query.data === undefined) return <ErrorText error={query.error ?? new Error("No data")} testId="state-error" />;
  const data = query.data;
  return (
    <>
      {query.isError ? (
        <div className="stale-banner" data-testid="state-stale">
          Live update failed, showing last data: {String((query.error as Error)?.message ?? "")}
        </div>
      ) : null}
      {isEmpty?.(data) ? <Empty>{empty ?? "Nothing here yet."}</Empty> : children(data)}
    </>
  );
}

export function Badge({ tone, children, testId }: { tone: "ok" | "warn" | "bad" | "info" | "neutral"; children: ReactNode; testId?: string }) {
  return (
    <span className={`badge badge-${tone}`} data-testid={testId}>
      {children}
    </span>
  );
}

/** null = not probed yet, which is different from failing probes. */
export function HealthBadge({ healthy, testId }: { healthy: boolean | null; testId?: string }) {
  if (healthy == null)
    return (
      <Badge tone="neutral" testId={testId}>
        unknown
      </Badge>
    );
  return (
    <Badge tone={healthy ? "ok" : "bad"} testId={testId}>
      {healthy ? "healthy" : "unhealthy"}
    </Badge>
  );
}

export function StateBadge({ state, testId }: { state: string; testId?: string }) {
  const tone =
    state === "enabled" || state === "healthy"
      ? "ok"
      : state === "draining" || state === "failed-over"
        ? "warn"
        : state === "disabled" || state === "failed"
          ? "bad"
          : "neutral";
  return (
    <Badge tone={tone} testId={testId}>
      {state}
    </Badge>
  );
}

/**
 * One badge for an LB: its lifecycle state (failed, failed-over) when it is not in service, else what
 * the probes say. A lifecycle "healthy" beside a probe "healthy" said the same thing twice, and an LB
 * that stopped answering but is not failed yet was easy to miss between them.
 */
export function LbStatusBadge({
  lb,
  testId,
}: {
  lb: { state: string; failedOverTo?: string | null; healthy: boolean; probed?: boolean; consecutiveFailures?: number; lastError?: string | null };
  testId?: string;
}) {
  if (lb.failedOverTo || lb.state !== "healthy") return <StateBadge state={lb.failedOverTo ? "failed-over" : lb.state} testId={testId} />;
  if (lb.probed === false) {
    return (
      <Badge tone="neutral" testId={testId}>
        probing
      </Badge>
    );
  }
  if (!lb.healthy) {
    const failures = lb.consecutiveFailures ?? 0;
    return (
      <span title={lb.lastError ?? undefined}>
        <Badge tone="bad" testId={testId}>
          not answering{failures > 0 ? ` (${failures})` : ""}
        </Badge>
      </span>
    );
  }
  return (
    <Badge tone="ok" testId={testId}>
      healthy
    </Badge>
  );
}

/** Share of requests as a bar, so a replica that concentrates traffic stands out in a column scan. */
/** `muted`: the replica takes no new requests (drained, disabled); what remains is the trailing window. */
export function ShareBar({ fraction, testId, muted }: { fraction: number | null | undefined; testId?: string; muted?: boolean }) {
  const f = fraction == null || !Number.isFinite(fraction) ? 0 : Math.max(0, Math.min(1, fraction));
  const tone = muted ? "muted" : f >= 0.8 ? "bad" : f >= 0.5 ? "warn" : "ok";
  return (
    <div className="share" data-testid={testId} data-share={f.toFixed(4)}>
      <div className="share-track">
        <div className={`share-fill share-${tone}`} style={{ width: `${f * 100}%` }} />
      </div>
      <span className="share-label">{fmtPct(fraction ?? null)}</span>
    </div>
  );
}

/**
 * Two-step inline confirmation: irreversible actions need a second, deliberate click. The armed
 * buttons replace the one that was focused, so keyboard focus moves to the confirm button (Enter
 * confirms, Escape cancels), and back to the first button once disarmed.
 */
export function ConfirmButton({
  label,
  confirmLabel,
  onConfirm,
  disabled,
  testId,
  tone = "danger",
  small = true,
}: {
  label: string;
  confirmLabel?: string;
  onConfirm: () => void;
  disabled?: boolean;
  testId?: string;
  tone?: "danger" | "warn";
  small?: boolean;
}) {
  const [armed, setArmed] = useState(false);
  const armRef = useRef<HTMLButtonElement>(null);
  const confirmRef = useRef<HTMLButtonElement>(null);
  const wasArmed = useRef(false);
  // Each state's buttons replace the other's: focus follows, so it never drops to <body>.
  useEffect(() => {
    if (armed) confirmRef.current?.focus();
    else if (wasArmed.current) armRef.current?.focus();
    wasArmed.current = armed;
  }, [armed]);
  const size = small ? " btn-small" : "";
  if (!armed) {
    return (
      <button type="button" ref={armRef} className={`btn btn-${tone}${size}`} disabled={disabled} data-testid={testId} onClick={() => setArmed(true)}>
        {label}
      </button>
    );
  }
  const cancelOnEscape = (e: KeyboardEvent) => {
    if (e.key !== "Escape") return;
    e.preventDefault();
    setArmed(false);
  };
  return (
    <span className="confirm">
      <button
        type="button"
        ref={confirmRef}
        className={`btn btn-${tone} btn-solid${size}`}
        data-testid={testId ? `${testId}-confirm` : undefined}
        onKeyDown={cancelOnEscape}
        onClick={() => {
          setArmed(false);
          onConfirm();
        }}
      >
        {confirmLabel ?? `Confirm ${label.toLowerCase()}`}
      </button>
      <button
        type="button"
        className={`btn${size}`}
        onKeyDown={cancelOnEscape}
        onClick={() => setArmed(false)}
        data-testid={testId ? `${testId}-cancel` : undefined}
      >
        Cancel
      </button>
    </span>
  );
}

export function Stat({ label, value, testId, tone }: { label: string; value: ReactNode; testId?: string; tone?: "bad" | "warn" }) {
  return (
    <div className={`stat ${tone ? `stat-${tone}` : ""}`}>
      <div className="stat-label">{label}</div>
      <div className="stat-value" data-testid={testId}>
        {value}
      </div>
    </div>
  );
}

export function ReadOnlyNote() {
  return (
    <div className="readonly-note" data-testid="readonly-note">
      Read-only: your role is viewer.
    </div>
  );
}

/** A labelled number input. The value stays the text typed (the form parses it on submit, and the
 * server's validation explains a bad one); `step="any"` takes fractions, the default whole numbers.
 * `invalid`: what is wrong with the value, when the form itself can tell (shown under the field). */
export function NumberField({
  label,
  value,
  onChange,
  testId,
  fractional,
  invalid,
}: {
  label: ReactNode;
  value: string;
  onChange: (value: string) => void;
  testId: string;
  fractional?: boolean;
  invalid?: string | null;
}) {
  return (
    <label>
      {label}
      <input
        type="number"
        step={fractional ? "any" : undefined}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        className={invalid ? "invalid" : undefined}
        aria-invalid={invalid ? true : undefined}
        data-testid={testId}
      />
      {invalid ? (
        <span className="hint-bad" data-testid={`${testId}-hint`}>
          {invalid}
        </span>
      ) : null}
    </label>
  );
}

/** A required choice among the fleet's regions, by name; empty until one is picked. */
export function RegionSelect({
  regions,
  value,
  onChange,
  testId,
}: {
  regions: readonly { id: number | string; name: string }[] | undefined;
  value: string;
  onChange: (e: { target: { value: string } }) => void;
  testId: string;
}) {
  return (
    <label>
      Region
      <select value={value} onChange={onChange} required data-testid={testId}>
        <option value="">—</option>
        {(regions ?? []).map((r) => (
          <option key={r.id} value={r.name}>
            {r.name}
          </option>
        ))}
      </select>
    </label>
  );
}

/** The actions of a form that adds something: submit (busy while the request runs), cancel, and the error. */
export function AddFormActions({
  label,
  pending,
  onCancel,
  error,
  testId,
}: {
  label: string;
  pending: boolean;
  onCancel: () => void;
  error: unknown;
  testId: string;
}) {
  return (
    <div className="form-actions">
      <button type="submit" className="btn btn-primary btn-solid" disabled={pending} data-testid={`${testId}-submit`}>
        {pending ? "Adding…" : label}
      </button>
      <button type="button" className="btn" onClick={onCancel}>
        Cancel
      </button>
      <ErrorText error={error} testId={`${testId}-error`} />
    </div>
  );
}
