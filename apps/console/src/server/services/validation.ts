// Checks shared by services (routers validate shape with zod; these check meaning and give the
// messages the UI shows).
import "server-only";
import { type AnyColumn, type SQL, sql } from "drizzle-orm";
import { HttpUrlSchema } from "@meridian/protocol";
import { invalid } from "../errors";

/** A replica's or LB's URL, trailing slashes trimmed. Judged by the LB config schema's own rule: a
 * URL it refuses (e.g. "http:/host:port", which `new URL()` accepts) would be stored and then make
 * every LB's config fail to build. */
export function requireHttpUrl(field: string, value: string): string {
  const url = value.replace(/\/+$/, "");
  if (!HttpUrlSchema.safeParse(url).success) {
    throw invalid(`${field} "${value}" is not a URL an LB accepts; expected an http or https URL such as http://host:port`);
  }
  // Paths are joined onto this URL (the admin API's, an engine's /v1/...): a query or a fragment
  // would swallow them, credentials would be sent in every log line, and port 0 answers nothing.
  // URL.search and URL.hash are "" for a bare "?" or "#" too, which still swallows every joined path.
  const parsed = new URL(url);
  const flaw =
    parsed.port === "0"
      ? "port 0"
      : parsed.search !== "" || url.includes("?")
        ? "a query string"
        : parsed.hash !== "" || url.includes("#")
          ? "a fragment"
          : parsed.username !== "" || parsed.password !== ""
            ? "credentials"
            : null;
  if (flaw !== null) throw invalid(`${field} "${value}" has ${flaw}; expected a base URL such as http://host:port (a path is allowed)`);
  return url;
}

/** Names that differ only in (ASCII) case name the same thing to an operator ("lb-us", "LB-US"): the
 * pickers, logs and audit could not tell them apart, so a new name conflicts with such a one too. */
export function sameName(column: AnyColumn, name: string): SQL {
  return sql`lower(${column}) = ${name.toLowerCase()}`;
}
