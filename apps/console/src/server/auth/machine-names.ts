// The machine's own names, which the console answers to besides localhost (host-check.ts): a browser
// or a Prometheus on this machine that reaches the console by the machine's name (Debian and Ubuntu
// map it to 127.0.1.1 in /etc/hosts), and `MERIDIAN_HOST=<the machine's name> npm start`, which
// prints http://<name>:3000 as the console's URL. The operator named the machine, as they name the
// hosts in MERIDIAN_ALLOWED_HOSTS, so a rebinding page cannot own either name.
import "server-only";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";

/** The canonical name /etc/hosts gives `name`: the first name of the first line that lists it
 * ("127.0.1.1 ops-box.example.com ops-box" → "ops-box.example.com"), which is what `hostname -f`
 * prints when the files come before DNS; null when no line lists it. */
export function canonicalNameIn(hostsText: string, name: string): string | null {
  const wanted = name.toLowerCase();
  for (const raw of hostsText.split("\n")) {
    const [, ...names] = raw.replace(/#.*/, "").trim().toLowerCase().split(/\s+/);
    if (names.includes(wanted)) return names[0] ?? null;
  }
  return null;
}

function readHostsFile(): string {
  try {
    return readFileSync("/etc/hosts", "utf8");
  } catch {
    return ""; // no such file (Windows, a minimal container): the host name alone
  }
}

/** The machine's host name and, when /etc/hosts gives it one, its fully qualified name. Only a
 * local file is read: asking DNS for the FQDN would cost a lookup, and could fail, at the first
 * request. */
export function machineNames(name = hostname(), hostsText = readHostsFile()): string[] {
  if (!name) return [];
  const canonical = canonicalNameIn(hostsText, name);
  return canonical && canonical !== name.toLowerCase() ? [name.toLowerCase(), canonical] : [name.toLowerCase()];
}
