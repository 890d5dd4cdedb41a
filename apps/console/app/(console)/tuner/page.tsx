import type { Metadata } from "next";
import { TunerPage } from "../../../src/components/tuner";

export const metadata: Metadata = { title: "Tuner" };

export default function Page() {
  return <TunerPage />;
}
