import type { Metadata } from "next";
import { RegionsPage } from "../../../src/components/regions";

export const metadata: Metadata = { title: "Regions" };

export default function Page() {
  return <RegionsPage />;
}
