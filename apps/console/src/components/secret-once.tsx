"use client";
import type { ReactNode } from "react";

/**
 * A secret the console shows exactly once (an LB token, a client API key): selectable text, what to
 * do with it, and a Done button that drops it from the page. The server keeps no copy it could show
 * again (client keys: only a hash; LB tokens: only for presenting to that LB).
 */
export function SecretOnce({
  title,
  secret,
  children,
  onDone,
  testId,
}: {
  title: string;
  secret: string;
  children: ReactNode;
  onDone: () => void;
  testId: string;
}) {
  return (
    <div className="secret-once" role="status" data-testid={testId}>
      <div className="strong">{title}</div>
      <code className="secret-value mono" data-testid={`${testId}-value`}>
        {secret}
      </code>
      <div className="muted small">{children} It is shown once: the console cannot show it again.</div>
      <button type="button" className="btn btn-small" onClick={onDone} data-testid={`${testId}-done`}>
        Done
      </button>
    </div>
  );
}
