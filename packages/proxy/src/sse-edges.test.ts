// SseObserver at the edges of the SSE format (WHATWG: a line ends with CRLF, LF or a bare CR; an
// event ends at an empty line) and what it tells the decode-rate learning about a stream of n choices.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { SseObserver } from "./sse";

function run(chunks: string[], stripUsage: boolean) {
  let firsts = 0;
  const observer = new SseObserver({ stripUsage, onFirstContent: () => firsts++ });
  const pushed = chunks.map((chunk) => observer.push(Buffer.from(chunk)).toString());
  const end = observer.end().toString();
  return { observer, pushed, end, all: pushed.join("") + end, firsts: () => firsts };
}

const content = (text: string, index = 0): string => JSON.stringify({ choices: [{ index, delta: { content: text } }] });
const USAGE = JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 1 } });

test("a usage event the client did not ask for is dropped even when the stream ends without its blank line", () => {
  const { all, observer } = run([`data: ${content("hi")}\n\n`, `data: ${USAGE}`], true);
  assert.equal(all, `data: ${content("hi")}\n\n`);
  assert.equal(observer.usage?.completionTokens, 1, "the LB still reads it");
  // Usage on the last content event, unterminated: the content stays, the usage goes.
  const attached = JSON.stringify({ choices: [{ index: 0, delta: { content: "yo" } }], usage: { prompt_tokens: 3, completion_tokens: 2 } });
  const second = run([`data: ${content("hi")}\n\n`, `data: ${attached}\n`], true);
  assert.equal(second.all, `data: ${content("hi")}\n\ndata: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "yo" } }] })}\n`);
  assert.equal(second.observer.content, "hiyo");
  // Passed through (the client asked for usage), the unterminated end goes out byte for byte.
  assert.equal(run([`data: ${content("hi")}\n\n`, `data: ${USAGE}`], false).all, `data: ${content("hi")}\n\ndata: ${USAGE}`);
});

test("events ended by bare CR line ends are forwarded as they come, and read", () => {
  const { pushed, observer, end, firsts } = run([`data: ${content("hi")}\r\r`, "data: [DONE]\r\r"], false);
  assert.deepEqual(pushed, [`data: ${content("hi")}\r\r`, "data: [DONE]\r\r"]);
  assert.equal(end, "");
  assert.equal(observer.content, "hi");
  assert.equal(observer.done, true);
  assert.equal(firsts(), 1);
  // A CR that turns out to start a CRLF is one line end: no event ends until the blank line.
  const split = run([`data: {"choices":[{"index":0,`, `"delta":{"content":"ok"}}]}\r`, "\n", "\r\n"], false);
  assert.deepEqual(split.pushed, ["", "", "", `data: {"choices":[{"index":0,"delta":{"content":"ok"}}]}\r\n\r\n`]);
  assert.equal(split.observer.content, "ok");
});

test("every mix of line ends a server may write ends its event, at any chunking, byte for byte", () => {
  for (const eol of ["\n", "\r", "\r\n"]) {
    for (const blank of ["\n", "\r", "\r\n"]) {
      // A CR line end then a LF is one CRLF line end, not a blank line: no event ends there.
      if (eol === "\r" && blank === "\n") continue;
      const events = [`event: message${eol}data: ${content("a")}${eol}${blank}`, `data: ${content("b")}${eol}${blank}`, `data: [DONE]${eol}${blank}`];
      const stream = events.join("");
      for (const size of [1, 2, 3, 5, stream.length]) {
        const chunks: string[] = [];
        for (let i = 0; i < stream.length; i += size) chunks.push(stream.slice(i, i + size));
        for (const stripUsage of [false, true]) {
          const label = `${JSON.stringify(eol + blank)} in chunks of ${size}, stripUsage ${stripUsage}`;
          const { all, observer, pushed } = run(chunks, stripUsage);
          assert.equal(all, stream, label);
          assert.equal(observer.content, "ab", label);
          assert.equal(observer.done, true, label);
          // Nothing is held past its event: the first event is out once its blank line has arrived.
          const firstEnd = events[0]?.length ?? 0;
          assert.ok(
            pushed
              .slice(0, Math.ceil(firstEnd / size))
              .join("")
              .startsWith(events[0] ?? ""),
            label,
          );
        }
      }
    }
  }
});

test("with bare CR line ends the usage event the client did not ask for is dropped, the rest kept", () => {
  const { all, observer } = run([`data: ${content("hi")}\r\r`, `data: ${USAGE}\r\rdata: [DONE]\r\r`], true);
  assert.equal(all, `data: ${content("hi")}\r\rdata: [DONE]\r\r`);
  assert.equal(observer.usage?.promptTokens, 3);
  // Its CRLF blank line split after the CR: the LF goes with the dropped event, not to the client.
  const split = run([`data: ${content("hi")}\r\n\r\n`, `data: ${USAGE}\r\n\r`, "\ndata: [DONE]\r\n\r\n"], true);
  assert.deepEqual(split.pushed, [`data: ${content("hi")}\r\n\r\n`, "", "data: [DONE]\r\n\r\n"]);
});

test("a stream of n choices is learned as n sequences; without usage, as the first choice's events", () => {
  const steps: string[] = [];
  for (let step = 0; step < 10; step++) for (let i = 0; i < 8; i++) steps.push(`data: ${content("tok ", i)}\n\n`);
  const usage = `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 20, completion_tokens: 80 } })}\n\n`;
  assert.deepEqual(run([...steps, usage, "data: [DONE]\n\n"], true).observer.decodeSample(), { outputTokens: 80, sequences: 8 });
  assert.deepEqual(run([...steps, "data: [DONE]\n\n"], true).observer.decodeSample(), { outputTokens: 10, sequences: 1 });
  const single = run([`data: ${content("a")}\n\n`, `data: ${JSON.stringify({ choices: [], usage: { completion_tokens: 1 } })}\n\n`], true);
  assert.deepEqual(single.observer.decodeSample(), { outputTokens: 1, sequences: 1 });
});
