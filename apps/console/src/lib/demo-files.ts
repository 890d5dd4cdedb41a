// Where the demo fleet and the console meet on disk: the demo's state directory (beside the console's
// database, one per base port) holds each demo LB's state, credentials and pid files, and the token
// the console issued it. The console (demo seed) writes `<lb id>.token`, mode 0600, as an operator
// would configure an LB with the token the console showed once; scripts/demo-fleet.ts starts each LB
// with MERIDIAN_LB_TOKEN_FILE pointing at it.
import { dirname, join } from "node:path";

/** `<directory of the database>/demo-<base port>`; `dbPath` absolute. */
export function demoStateDir(dbPath: string, basePort: number): string {
  return join(dirname(dbPath), `demo-${basePort}`);
}

export function demoTokenFile(stateDir: string, lbId: string): string {
  return join(stateDir, `${lbId}.token`);
}
