"use client";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { fmtClock } from "../lib/format";
import type { RouterOutputs } from "../trpc/app-router";
import { useTRPC } from "../trpc/client";
import { SecretOnce } from "./secret-once";
import { Badge, ConfirmButton, ErrorText, MessageLine } from "./ui";
import { useInvalidateAll } from "./use-action";

type LbRow = RouterOutputs["lbs"]["list"][number];

/**
 * Whether the console still has a token update to make on a proven LB: a rotation's install, a
 * retire that is due, or a token the LB holds that this console did not issue. While the LB is
 * proven the server's `error` is the last failed update (services/lb-tokens.ts); the next update
 * that succeeds clears it, but one that is never needed again (after "Issue new token") does not,
 * so it is shown only while an update is due.
 */
function tokenUpdateDue(c: LbRow["credential"], now: number): boolean {
  if (c.pendingKeyId !== null) return true;
  if (c.retiringKeyId !== null && c.retireAt !== null && c.retireAt <= now) return true;
  return c.heldByLb.some((keyId) => keyId !== c.keyId && keyId !== c.retiringKeyId);
}

/** The LB's token as the console knows it: key id (a public fingerprint), proof, rotation. */
export function LbTokenCell({ lb }: { lb: LbRow }) {
  const c = lb.credential;
  return (
    <div data-testid={`lb-token-${lb.name}`} data-key-id={c.keyId ?? ""} data-proven={String(c.proven)} data-retiring={c.retiringKeyId ?? ""}>
      <div className="mono small">{c.keyId ?? "no token"}</div>
      <Badge tone={c.proven ? "ok" : "warn"} testId={`lb-token-proof-${lb.name}`}>
        {c.proven ? "proven" : "not proven"}
      </Badge>
      {c.pendingKeyId ? <div className="muted small">rotating to {c.pendingKeyId}</div> : null}
      {c.retiringKeyId && c.retireAt ? (
        <div className="muted small" data-testid={`lb-token-retiring-${lb.name}`}>
          {c.retiringKeyId} accepted until {fmtClock(c.retireAt)}
        </div>
      ) : null}
      {c.error && (!c.proven || tokenUpdateDue(c, Date.now())) ? (
        <MessageLine text={c.error} prefix={c.proven ? "token update failed, retrying: " : null} testId={`lb-token-error-${lb.name}`} />
      ) : null}
    </div>
  );
}

/** Rotate (the console installs the next token on the LB) or issue a new one (shown once). */
export function LbTokenActions({ lb }: { lb: LbRow }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const [issued, setIssued] = useState<string | null>(null);
  const rotate = useMutation(trpc.lbs.rotateToken.mutationOptions({ onSuccess: invalidateAll }));
  const issue = useMutation(
    trpc.lbs.issueToken.mutationOptions({
      onSuccess: async (result) => {
        setIssued(result.token);
        await invalidateAll();
      },
    }),
  );
  const busy = rotate.isPending || issue.isPending;
  return (
    <div className="row-actions action-line">
      <ConfirmButton
        label="Rotate token"
        tone="warn"
        disabled={busy || lb.credential.keyId === null}
        onConfirm={() => rotate.mutate({ id: lb.id })}
        testId={`lb-rotate-${lb.name}`}
      />
      <ConfirmButton label="Issue new token" tone="warn" disabled={busy} onConfirm={() => issue.mutate({ id: lb.id })} testId={`lb-issue-token-${lb.name}`} />
      <ErrorText error={rotate.error ?? issue.error} testId={`lb-token-action-error-${lb.name}`} />
      {issued ? <LbTokenOnce token={issued} onDone={() => setIssued(null)} testId={`lb-issued-token-${lb.name}`} /> : null}
    </div>
  );
}

export function LbTokenOnce({ token, onDone, testId }: { token: string; onDone: () => void; testId: string }) {
  return (
    <SecretOnce title="LB token" secret={token} onDone={onDone} testId={testId}>
      Start the LB with <span className="mono">MERIDIAN_LB_TOKEN</span> set to it (or a file named by <span className="mono">MERIDIAN_LB_TOKEN_FILE</span>).
      Until the LB proves it holds it, the console sends it nothing and no LB polls it.
    </SecretOnce>
  );
}
