import type { Metadata } from "next";
import { ExperimentsPage } from "../../../src/components/experiments";

export const metadata: Metadata = { title: "Experiments" };

export default function Page() {
  return <ExperimentsPage />;
}
