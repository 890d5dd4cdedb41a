// The single place the UI learns the server's router type. Type-only: nothing from the server is
// bundled into the client.
import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "../server/trpc/root";

export type { AppRouter };
export type RouterOutputs = inferRouterOutputs<AppRouter>;
