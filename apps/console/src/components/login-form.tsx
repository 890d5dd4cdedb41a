"use client";
import { useState, type FormEvent } from "react";
import { safeNextPath } from "../lib/safe-redirect";
import { throttledMessage } from "./login-messages";

/** Turns the login endpoint's failure into words; 429 means the rate limiter, not a bad password. */
async function loginFailureMessage(res: Response): Promise<string> {
  if (res.status === 429) return throttledMessage(res.headers.get("retry-after"));
  let serverMessage = "";
  try {
    const body = (await res.json()) as { error?: string | { message?: string }; message?: string };
    serverMessage = typeof body.error === "string" ? body.error : (body.error?.message ?? body.message ?? "");
  } catch {
    serverMessage = "";
  }
  if (res.status === 401 || res.status === 403) return serverMessage || "Invalid username or password.";
  return serverMessage || `Login failed (HTTP ${res.status}).`;
}

/** `initialError`: what the page was sent back with after a form post that failed (no script ran). */
export function LoginForm({ next, initialError = null }: { next: string; initialError?: string | null }) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(initialError);
  const [pending, setPending] = useState(false);

  async function onSubmit(e: FormEvent) {
    e.preventDefault();
    setPending(true);
    setError(null);
    try {
      const res = await fetch("/api/auth/login", {
        method: "POST",
        headers: { "content-type": "application/json" },
        credentials: "same-origin",
        body: JSON.stringify({ username, password }),
      });
      if (!res.ok) {
        setError(await loginFailureMessage(res));
        return;
      }
      // Checked again here, as parsed by the browser's own URL parser: an open redirect on the login
      // page would be a phishing aid (lib/safe-redirect.ts).
      window.location.assign(safeNextPath(next));
    } catch (err) {
      setError(`Network error: ${(err as Error).message}`);
    } finally {
      setPending(false);
    }
  }

  return (
    // method and action for a submit before the script has loaded (a fast Enter): without them the
    // browser sent a GET to this page with the password in the query string (history, access logs).
    // The endpoint takes the form post and redirects back, here with ?error=<kind> on a refusal.
    <form className="login-form" method="post" action="/api/auth/login" onSubmit={onSubmit} data-testid="login-form">
      <input type="hidden" name="next" value={next} />
      <label>
        Username
        <input
          name="username"
          autoComplete="username"
          value={username}
          onChange={(e) => setUsername(e.target.value)}
          required
          data-testid="login-username"
          // biome-ignore lint/a11y/noAutofocus: the page's only job is this form; focusing it saves a click
          autoFocus
        />
      </label>
      <label>
        Password
        <input
          name="password"
          type="password"
          autoComplete="current-password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          required
          data-testid="login-password"
        />
      </label>
      {error ? (
        <div className="error-text" role="alert" data-testid="login-error">
          {error}
        </div>
      ) : null}
      <button type="submit" className="btn btn-primary btn-solid" disabled={pending} data-testid="login-submit">
        {pending ? "Signing in…" : "Sign in"}
      </button>
    </form>
  );
}
