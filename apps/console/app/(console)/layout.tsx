import { redirect } from "next/navigation";
import type { ReactNode } from "react";
import { AppShell } from "../../src/components/shell";
import { getSessionUser } from "../../src/server/auth/session";

// The proxy already bounces cookie-less requests; this catches expired or forged sessions too.
export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  const user = await getSessionUser();
  if (!user) redirect("/login");
  return <AppShell user={{ username: user.username, role: user.role }}>{children}</AppShell>;
}
