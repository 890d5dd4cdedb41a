// MERIDIAN_TRUSTED_PROXIES: the reverse proxies whose X-Forwarded-For / -Host / -Proto headers the
// console believes. Anyone else can put anything in those headers, so from any other peer they are
// ignored. Entries are IP addresses, CIDR blocks, or the word "loopback" (127.0.0.0/8 and ::1).
import "server-only";
import { BlockList, isIP } from "node:net";
import { normaliseAddress } from "./peer-address";

export class TrustedProxies {
  private readonly list = new BlockList();

  constructor(readonly entries: readonly string[]) {
    for (const entry of entries) {
      if (entry === "loopback") {
        this.list.addSubnet("127.0.0.0", 8, "ipv4");
        this.list.addAddress("::1", "ipv6");
        continue;
      }
      const [address, prefix] = entry.split("/") as [string, string | undefined];
      const family = isIP(address) === 6 ? "ipv6" : "ipv4";
      if (prefix === undefined) this.list.addAddress(address, family);
      else this.list.addSubnet(address, Number(prefix), family);
    }
  }

  get isEmpty(): boolean {
    return this.entries.length === 0;
  }

  has(address: string | null): boolean {
    if (!address) return false;
    const normal = normaliseAddress(address);
    const family = isIP(normal);
    if (family === 0) return false;
    return this.list.check(normal, family === 6 ? "ipv6" : "ipv4");
  }
}

/** Parses "10.0.0.1, 10.1.0.0/16, loopback"; throws an Error naming the first bad entry. */
export function parseTrustedProxies(text: string): TrustedProxies {
  const entries = text
    .split(",")
    .map((entry) => entry.trim().toLowerCase())
    .filter((entry) => entry !== "");
  for (const entry of entries) {
    if (entry === "loopback") continue;
    const [address, prefix, extra] = entry.split("/");
    const family = isIP(address ?? "");
    const maxPrefix = family === 6 ? 128 : 32;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= maxPrefix);
    if (family === 0 || !prefixOk || extra !== undefined) {
      throw new Error(`"${entry}" is not an IP address, a CIDR block (10.0.0.0/8) or "loopback"`);
    }
  }
  return new TrustedProxies(entries);
}

export const NO_TRUSTED_PROXIES = new TrustedProxies([]);
