// Tells a request that its client's connection closed. A pipelined request's response waits,
// unattached to the socket, until those before it on the connection have ended, and emits no "close"
// when the client hangs up meanwhile: only the socket's "close" says so. A listener on the socket per
// request would pile up on a keep-alive connection carrying many at once (past 10, Node warns of a
// listener leak), so each socket gets one listener that tells every request in flight on it.
import type { Socket } from "node:net";

const inFlightOn = new WeakMap<Socket, Set<() => void>>();

/** Calls `onClose` when the socket closes; the returned function stops that (the request ended while
 * the connection goes on). */
export function onSocketClose(socket: Socket, onClose: () => void): () => void {
  const listeners = inFlightOn.get(socket) ?? watch(socket);
  listeners.add(onClose);
  return () => void listeners.delete(onClose);
}

function watch(socket: Socket): Set<() => void> {
  const listeners = new Set<() => void>();
  inFlightOn.set(socket, listeners);
  socket.once("close", () => {
    for (const listener of listeners) listener();
  });
  return listeners;
}
