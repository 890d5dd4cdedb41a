import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { LoginForm } from "../../src/components/login-form";
import { formErrorMessage } from "../../src/components/login-messages";
import { safeNextPath } from "../../src/lib/safe-redirect";
import { getSessionUser } from "../../src/server/auth/session";

export const metadata: Metadata = { title: "Log in" };

export default async function LoginPage({
  searchParams,
}: {
  searchParams: Promise<{ next?: string | string[]; error?: string | string[]; retry?: string | string[] }>;
}) {
  if (await getSessionUser()) redirect("/");
  const { next, error, retry } = await searchParams;
  return (
    <div className="login-page" data-testid="page-login">
      <div className="login-card">
        <div className="brand login-brand">
          <span className="brand-mark">◆</span> Meridian
        </div>
        <p className="muted">Inference traffic console</p>
        <LoginForm
          next={safeNextPath(typeof next === "string" ? next : "/")}
          initialError={formErrorMessage(typeof error === "string" ? error : undefined, typeof retry === "string" ? retry : undefined)}
        />
      </div>
    </div>
  );
}
