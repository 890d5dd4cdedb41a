import type { Metadata } from "next";
import type { ReactNode } from "react";
import { TRPCReactProvider } from "../src/trpc/client";
import "./globals.css";

export const metadata: Metadata = {
  title: { default: "Meridian", template: "%s · Meridian" },
  description: "LLM inference traffic router across regions",
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <TRPCReactProvider>{children}</TRPCReactProvider>
      </body>
    </html>
  );
}
