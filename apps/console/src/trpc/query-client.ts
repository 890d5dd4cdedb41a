import { MutationCache, QueryCache, QueryClient } from "@tanstack/react-query";
import { TRPCClientError } from "@trpc/client";

/** How often live pages refetch. The console is a monitoring tool: staleness beyond ~2 s misleads. */
export const LIVE_INTERVAL_MS = 1500;

const NO_RETRY_CODES = new Set(["UNAUTHORIZED", "FORBIDDEN", "BAD_REQUEST", "NOT_FOUND", "CONFLICT"]);

function errorCode(error: unknown): string | undefined {
  if (!(error instanceof TRPCClientError)) return undefined;
  const code = (error.data as { code?: string } | undefined)?.code;
  if (code) return code;
  // The proxy answers a cookie-less API call with a plain 401, not a tRPC error body.
  const status = (error.meta as { response?: { status?: number } } | undefined)?.response?.status;
  return status === 401 ? "UNAUTHORIZED" : undefined;
}

/** An expired or revoked session makes every live query fail; send the operator to log in again. */
function redirectOnUnauthorized(error: unknown): void {
  if (typeof window !== "undefined" && errorCode(error) === "UNAUTHORIZED" && window.location.pathname !== "/login") {
    window.location.assign(`/login?next=${encodeURIComponent(window.location.pathname)}`);
  }
}

export function makeQueryClient(): QueryClient {
  return new QueryClient({
    queryCache: new QueryCache({ onError: redirectOnUnauthorized }),
    mutationCache: new MutationCache({ onError: redirectOnUnauthorized }),
    defaultOptions: {
      queries: {
        staleTime: 1000,
        // Retrying a permission or validation error only delays the message the operator needs.
        retry: (failureCount, error) => {
          const code = errorCode(error);
          if (code && NO_RETRY_CODES.has(code)) return false;
          return failureCount < 2;
        },
      },
      mutations: { retry: false },
    },
  });
}
