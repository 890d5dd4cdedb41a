// auth: who is logged in. Login and logout are route handlers (/api/auth/*) because they set cookies.
import "server-only";
import type { TRPCRouterRecord } from "@trpc/server";
import { publicProcedure } from "../trpc/init";

export const authRouter = {
  me: publicProcedure.query(({ ctx }) => (ctx.user ? { username: ctx.user.username, role: ctx.user.role } : null)),
} satisfies TRPCRouterRecord;
