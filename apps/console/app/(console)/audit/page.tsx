import type { Metadata } from "next";
import { AuditPage } from "../../../src/components/audit";

export const metadata: Metadata = { title: "Audit" };

export default function Page() {
  return <AuditPage />;
}
