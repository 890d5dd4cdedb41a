// Where to go after login: only a path on this console. Shared by the login route (server) and the
// login form (client), so both judge `next` the same way.
//
// Prefix checks on the raw string are not enough, because the browser's URL parser rewrites it
// afterwards: "/\evil.example/x" becomes "//evil.example/x" (a backslash is a slash in http URLs) and
// "/<TAB>/evil.example/x" loses its tab; both then name another host. So `next` is parsed with the
// same WHATWG parser against a placeholder origin, and accepted only if it stays on that origin; the
// path it yields is parsed once more, because a path can itself start with "//" ("/a/..//evil").

const BASE = "http://meridian.invalid";

/** `next` as a same-origin path ("/replicas?x=1#y"), or "/" when it would leave the origin. */
export function safeNextPath(next: string | null | undefined): string {
  if (!next?.startsWith("/")) return "/";
  try {
    const url = new URL(next, BASE);
    if (url.origin !== BASE) return "/";
    const path = `${url.pathname}${url.search}${url.hash}`;
    return new URL(path, BASE).origin === BASE && !path.startsWith("//") ? path : "/";
  } catch {
    return "/";
  }
}
