import type { Metadata } from "next";
import { LbsPage } from "../../../src/components/lbs";

export const metadata: Metadata = { title: "Load balancers" };

export default function Page() {
  return <LbsPage />;
}
