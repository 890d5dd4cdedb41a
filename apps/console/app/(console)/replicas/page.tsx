import type { Metadata } from "next";
import { ReplicasPage } from "../../../src/components/replicas";

export const metadata: Metadata = { title: "Replicas" };

export default function Page() {
  return <ReplicasPage />;
}
