import { redirect } from "next/navigation";
import type { ReactNode } from "react";
import { AppShell } from "../../src/components/shell";
import { getSessionUser } from "../../src/server/auth/session";
import { getRuntime } from "../../src/server/runtime/global";

// The proxy already bounces cookie-less requests; this catches expired or forged sessions too.
export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  const user = await getSessionUser();
  if (!user) redirect("/login");
  // Who leads the background duties, as of this render: the badge shows it until its own poll of
  // /api/health answers (the layout does not re-render on navigation, and leadership changes when a
  // console dies).
  const { isLeader, leaderUrl, term } = (await getRuntime({ start: true })).leadership.view();
  return (
    <AppShell user={{ username: user.username, role: user.role }} leadership={{ isLeader, leaderUrl, term }}>
      {children}
    </AppShell>
  );
}
