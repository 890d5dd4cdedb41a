"use client";
import { createContext, useContext, type ReactNode } from "react";

export type Role = "operator" | "viewer";
export interface SessionUser {
  username: string;
  role: Role;
}

const SessionContext = createContext<SessionUser | null>(null);

/** The server layout resolves the session once and hands it down, so pages know the role without a round trip. */
export function SessionProvider({ user, children }: { user: SessionUser; children: ReactNode }) {
  return <SessionContext.Provider value={user}>{children}</SessionContext.Provider>;
}

/** Mutation controls render only for operators; the server enforces the same rule regardless. */
export function useCanMutate(): boolean {
  return useContext(SessionContext)?.role === "operator";
}
