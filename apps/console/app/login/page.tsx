import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { LoginForm } from "../../src/components/login-form";
import { safeNextPath } from "../../src/lib/safe-redirect";
import { getSessionUser } from "../../src/server/auth/session";

export const metadata: Metadata = { title: "Log in" };

/** What a refused form post (login without the script) comes back with: /login?error=invalid. */
const FORM_ERRORS: Record<string, string> = { invalid: "Invalid username or password." };

export default async function LoginPage({ searchParams }: { searchParams: Promise<{ next?: string | string[]; error?: string | string[] }> }) {
  if (await getSessionUser()) redirect("/");
  const { next, error } = await searchParams;
  return (
    <div className="login-page" data-testid="page-login">
      <div className="login-card">
        <div className="brand login-brand">
          <span className="brand-mark">◆</span> Meridian
        </div>
        <p className="muted">Inference traffic console</p>
        <LoginForm next={safeNextPath(typeof next === "string" ? next : "/")} initialError={typeof error === "string" ? (FORM_ERRORS[error] ?? null) : null} />
      </div>
    </div>
  );
}
