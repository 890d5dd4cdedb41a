// The host names the console answers to (DNS-rebinding defence, host-check.ts): parsed from env
// (MERIDIAN_ALLOWED_HOSTS) and matched against the host a request names. No imports of the console:
// src/env.ts validates the setting with it.
import "server-only";
import { isIP } from "node:net";
import { machineNames } from "./machine-names";

/** "console.example.com" from "Console.Example.com:8443", "[::1]" from "[::1]:3000"; a final dot dropped. */
function hostName(host: string): string {
  const value = host.trim().toLowerCase();
  const name = value.startsWith("[") ? value.slice(0, value.indexOf("]") + 1) : value.replace(/:\d*$/, "");
  return name.endsWith(".") ? name.slice(0, -1) : name;
}

function isAddressLiteral(name: string): boolean {
  return name.startsWith("[") ? isIP(name.slice(1, -1)) === 6 : isIP(name) === 4;
}

const NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

/** MERIDIAN_ALLOWED_HOSTS: comma-separated host names, without scheme or port. Throws on a bad entry. */
export function parseAllowedHosts(text: string): string[] {
  const names = text
    .split(",")
    .map((entry) => entry.trim().toLowerCase())
    .filter((entry) => entry !== "");
  for (const name of names) {
    if (!NAME.test(name) && !isAddressLiteral(name)) {
      throw new Error(`"${name}" is not a host name (list names only, e.g. console.internal,meridian.example.com: no scheme, no port)`);
    }
  }
  return names;
}

/** The host name the console was bound to (`MERIDIAN_HOST`, which `npm start` passes to `next start
 * -H`), when it is a name: the operator chose it as they choose MERIDIAN_ALLOWED_HOSTS, and `npm
 * start` prints it in the console's URL. An address (0.0.0.0, ::1) adds nothing: addresses pass anyway. */
export function boundHostNames(host: string | undefined): string[] {
  const name = host?.trim().toLowerCase().replace(/\.$/, "") ?? "";
  return NAME.test(name) && !isAddressLiteral(name) ? [name] : [];
}

export class AllowedHosts {
  private readonly names: Set<string>;

  /** `publicOrigin`: MERIDIAN_PUBLIC_URL's origin or null; `names`: MERIDIAN_ALLOWED_HOSTS;
   * `machine`: this machine's own names (machine-names.ts). */
  constructor(publicOrigin: string | null, names: readonly string[] = [], machine: readonly string[] = machineNames()) {
    this.names = new Set(["localhost", ...machine.map(hostName), ...names]);
    if (publicOrigin) this.names.add(hostName(new URL(publicOrigin).host));
  }

  allows(host: string): boolean {
    const name = hostName(host);
    return this.names.has(name) || isAddressLiteral(name);
  }
}
