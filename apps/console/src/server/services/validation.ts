// Checks shared by services (routers validate shape with zod; these check meaning and give the
// messages the UI shows).
import "server-only";
import { invalid } from "../errors";

export function requireHttpUrl(field: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid(`${field} "${value}" is not a URL; expected http://host:port`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw invalid(`${field} must be an http or https URL, got "${url.protocol.replace(/:$/, "")}"`);
  }
  return value.replace(/\/+$/, "");
}
