"use client";
import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import { useState, type ReactNode } from "react";
import type { LeadershipView } from "../lib/leadership";
import { LeaderBadge } from "./leader-badge";
import { SessionProvider, type SessionUser } from "./session";

const NAV_ITEMS = [
  { href: "/", label: "Overview", testId: "nav-overview" },
  { href: "/regions", label: "Regions", testId: "nav-regions" },
  { href: "/replicas", label: "Replicas", testId: "nav-replicas" },
  { href: "/lbs", label: "Load balancers", testId: "nav-lbs" },
  { href: "/keys", label: "API keys", testId: "nav-keys" },
  { href: "/tuner", label: "Tuner", testId: "nav-tuner" },
  { href: "/experiments", label: "Experiments", testId: "nav-experiments" },
  { href: "/audit", label: "Audit", testId: "nav-audit" },
] as const;

function isActive(pathname: string, href: string): boolean {
  return href === "/" ? pathname === "/" : pathname === href || pathname.startsWith(`${href}/`);
}

export function AppShell({ user, leadership, children }: { user: SessionUser; leadership: LeadershipView; children: ReactNode }) {
  const pathname = usePathname() ?? "/";
  const router = useRouter();
  const [loggingOut, setLoggingOut] = useState(false);

  async function logout() {
    setLoggingOut(true);
    try {
      await fetch("/api/auth/logout", { method: "POST", credentials: "same-origin" });
    } finally {
      // Full navigation, not a client transition: drops every cached query of the old session.
      window.location.assign("/login");
    }
  }

  return (
    <SessionProvider user={user}>
      <div className="shell">
        <aside className="sidebar">
          <Link href="/" className="brand" data-testid="brand">
            <span className="brand-mark">◆</span> Meridian
          </Link>
          <nav className="nav" data-testid="nav">
            {NAV_ITEMS.map((item) => (
              <Link
                key={item.href}
                href={item.href}
                data-testid={item.testId}
                className={isActive(pathname, item.href) ? "nav-link active" : "nav-link"}
                onMouseEnter={() => router.prefetch(item.href)}
              >
                {item.label}
              </Link>
            ))}
          </nav>
          <div className="user-box" data-testid="user-box">
            <div className="user-name" data-testid="current-user">
              {user.username}
            </div>
            <div className={`role role-${user.role}`} data-testid="current-role">
              {user.role}
            </div>
            <LeaderBadge initial={leadership} />
            <button type="button" className="btn btn-small" onClick={logout} disabled={loggingOut} data-testid="logout">
              {loggingOut ? "Logging out…" : "Log out"}
            </button>
          </div>
        </aside>
        <main className="content">{children}</main>
      </div>
    </SessionProvider>
  );
}
