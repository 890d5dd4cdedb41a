import { TRPCClientError } from "@trpc/client";

/** The message to put next to a form or button. The server writes these for operators, so show them. */
export function errorMessage(error: unknown): string {
  if (error instanceof TRPCClientError) {
    const code = (error.data as { code?: string } | undefined)?.code;
    if (code === "FORBIDDEN") return `Forbidden: ${error.message || "your role is read-only"}`;
    if (code === "UNAUTHORIZED") return "Session expired — log in again.";
    return error.message;
  }
  if (error instanceof Error) return error.message;
  return String(error);
}
