// Next-facing session helpers for server components and layouts: `getSessionUser()` reads the
// session cookie and returns the user, or null. Only for the Next server (next/headers).
import "server-only";
import { cookies } from "next/headers";
import { getRuntime } from "../runtime/global";
import { resolveSession, SESSION_COOKIE } from "./session-store";
import type { SessionUser } from "./users";

export type { SessionUser } from "./users";

export async function getSessionUser(): Promise<SessionUser | null> {
  const jar = await cookies();
  const token = jar.get(SESSION_COOKIE)?.value;
  if (!token) return null;
  return resolveSession((await getRuntime({ start: true })).store, token);
}
