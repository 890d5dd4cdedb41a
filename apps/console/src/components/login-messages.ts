// The login page's words for a refused login, shared by the login form (an answer to its fetch) and
// the login page (a form posted before the script loaded comes back as /login?error=<kind>, with
// &retry=<seconds> when throttled; server/auth/login.ts).

/** "Too many login attempts. Try again in 60 s." (seconds from Retry-After or ?retry=). */
export function throttledMessage(retryAfter: string | null | undefined): string {
  const seconds = Number(retryAfter);
  return `Too many login attempts. Try again${retryAfter && Number.isInteger(seconds) && seconds > 0 ? ` in ${seconds} s` : " later"}.`;
}

/** The message for /login?error=<kind>; null for no or an unknown kind. */
export function formErrorMessage(error: string | undefined, retry: string | undefined): string | null {
  switch (error) {
    case "invalid":
      return "Invalid username or password.";
    case "throttled":
      return throttledMessage(retry);
    case "refused":
      return "The login was refused: it did not come from this console's own page. Open the console at its usual address and try again.";
    case "malformed":
      return "Enter a username and a password.";
    default:
      return null;
  }
}
