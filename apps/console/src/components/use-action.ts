"use client";
import { useQueryClient } from "@tanstack/react-query";
import { useCallback } from "react";

/**
 * After any operator action, refetch everything: one action (a drain, a failover) changes what several
 * pages show, and the live interval alone would leave the acting operator looking at the old state.
 */
export function useInvalidateAll(): () => Promise<void> {
  const queryClient = useQueryClient();
  return useCallback(() => queryClient.invalidateQueries(), [queryClient]);
}
