// tRPC (v11) setup: superjson, readable validation messages, and the three procedure kinds.
// - publicProcedure: no session needed (auth.me).
// - viewerProcedure: any logged-in user (queries).
// - operatorProcedure: operators only (every mutation); a viewer gets FORBIDDEN.
import "server-only";
import { initTRPC, TRPCError } from "@trpc/server";
import superjson from "superjson";
import { ZodError } from "zod";
import type { Actor } from "../audit-trail";
import type { SessionUser } from "../auth/users";
import type { ServiceRuntime } from "../services/context";
import { isUnexpected, unexpectedMessage } from "./internal-errors";

export interface TrpcContext {
  rt: ServiceRuntime;
  user: SessionUser | null;
}

/** "name: must not be empty; url: expected an http or https URL" from a ZodError. */
function describeZodError(error: ZodError): string {
  return error.issues.map((issue) => (issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message)).join("; ");
}

const t = initTRPC.context<TrpcContext>().create({
  transformer: superjson,
  errorFormatter({ shape, error }) {
    // A 500 nothing mapped: its message (and its stack, which repeats it) stays in the log.
    if (isUnexpected(error)) {
      const { stack: _stack, ...data } = shape.data;
      return { ...shape, message: unexpectedMessage(error), data: { ...data, zodIssues: null } };
    }
    const zodError = error.cause instanceof ZodError ? error.cause : null;
    return {
      ...shape,
      message: zodError ? describeZodError(zodError) : shape.message,
      data: { ...shape.data, zodIssues: zodError ? zodError.issues.map((i) => ({ path: i.path.map(String), message: i.message })) : null },
    };
  },
});

export const router = t.router;

export const publicProcedure = t.procedure;

export const viewerProcedure = t.procedure.use(({ ctx, next }) => {
  if (!ctx.user) throw new TRPCError({ code: "UNAUTHORIZED", message: "log in to use the console" });
  const actor: Actor = { username: ctx.user.username, role: ctx.user.role };
  return next({ ctx: { ...ctx, user: ctx.user, actor } });
});

export const operatorProcedure = viewerProcedure.use(({ ctx, next }) => {
  if (ctx.user.role !== "operator") {
    throw new TRPCError({ code: "FORBIDDEN", message: `user "${ctx.user.username}" is a viewer; only operators can change the fleet` });
  }
  return next();
});
