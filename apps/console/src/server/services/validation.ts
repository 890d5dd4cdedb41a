// Checks shared by services (routers validate shape with zod; these check meaning and give the
// messages the UI shows).
import "server-only";
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
  return url;
}
