import type { Metadata } from "next";
import { ClientKeysPage } from "../../../src/components/client-keys";

export const metadata: Metadata = { title: "API keys" };

export default function Page() {
  return <ClientKeysPage />;
}
