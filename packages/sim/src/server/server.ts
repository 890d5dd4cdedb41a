// The simulated engine HTTP server: the OpenAI API of an SGLang or vLLM replica (chat and text
// completions, streamed or not, with usage and cached tokens; embeddings, embeddings.ts), /v1/models,
// /health, /flush_cache and /metrics, all on node:http, in front of the same EngineModel the fleet
// simulator runs.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { DEFAULT_BLOCK_CHARS, RoutingInputError } from "@meridian/routing";
import { DEMO_ENGINE_PARAMS, EngineModel, withBlockTokens, type EngineParams } from "../engine";
import { checkInputLength, outputLimit } from "./context";
import { EmbeddingsBody, embeddingPrompts, embeddingsResponse, type EmbeddingResult } from "./embeddings";
import { EngineDriver } from "./engine-driver";
import { ReplyText } from "./filler";
import { EngineMetrics, type Dialect } from "./metrics";
import { DelayedResponse, emulatedRttMs, sleep, sourceRegion, type RttMatrix } from "./network";
import {
  ChatCompletionBody,
  ChunkWriter,
  CompletionBody,
  OpenAIError,
  chatCompletion,
  parseBody,
  textCompletion,
  usage,
  type FinishReason,
  type ResponseHeader,
} from "./openai";
import { CHARS_PER_TOKEN, chatPrompt, textPrompt, type PromptView } from "./prompt";

/** Tokens one chat block key stands for: 64-character blocks at 4 characters per token. */
export const CHAT_BLOCK_TOKENS = DEFAULT_BLOCK_CHARS / CHARS_PER_TOKEN;
/** Forces the reply length (for tests and load generators); still capped by max_tokens. */
export const OUTPUT_TOKENS_HEADER = "x-meridian-output-tokens";
const DEFAULT_COMPLETION_MAX_TOKENS = 16;
/** Largest request body accepted, in bytes (an 80 KB prompt is far below it). */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

export interface EngineServerOptions {
  host?: string;
  port?: number;
  id: string;
  region: string;
  model?: string;
  dialect?: Dialect;
  /** Engine parameters; default DEMO_ENGINE_PARAMS. blockTokens is forced to CHAT_BLOCK_TOKENS and
   * emitTokenEvents to true, since the server keys prompts in chat blocks and paces every token. */
  params?: EngineParams;
  /** RTT in ms between regions, looked up as rttMatrix[src][own] (or the reverse). */
  rttMatrix?: RttMatrix;
  /** Words the filler replies are made of (default: a built-in vocabulary). */
  tokenText?: string;
  /** Told about unexpected failures (answered with 500); the server itself never logs. */
  onError?: (error: unknown) => void;
  /** Report cached prompt tokens in usage (default true), as vLLM does with
   * --enable-prompt-tokens-details and SGLang with --enable-cache-report; false sends
   * `prompt_tokens_details: null`, as they do without. */
  cacheReport?: boolean;
}

export interface EngineServer {
  url: string;
  port: number;
  engine: EngineModel;
  close(): Promise<void>;
}

function forcedOutputTokens(req: IncomingMessage): number | undefined {
  const raw = req.headers[OUTPUT_TOKENS_HEADER];
  if (raw === undefined) return undefined;
  const value = Number(Array.isArray(raw) ? raw[0] : raw);
  if (!Number.isInteger(value) || value < 1) {
    throw new OpenAIError(400, `Invalid '${OUTPUT_TOKENS_HEADER}' header: expected a positive integer.`, OUTPUT_TOKENS_HEADER, "invalid_value");
  }
  return value;
}

/**
 * The request body as text. Past MAX_BODY_BYTES it rejects with a 413 and stops buffering, but keeps
 * reading (and dropping) what the client still sends: the socket has to stay up until the 413 is
 * written (destroying it here left the client with a reset and no answer). Once the response has
 * finished, the request is destroyed; the 413 says `connection: close`.
 */
function readBody(req: IncomingMessage, res: ServerResponse): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let overflowed = false;
    req.on("data", (chunk: Buffer) => {
      if (overflowed) return;
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) {
        chunks.push(chunk);
        return;
      }
      overflowed = true;
      chunks.length = 0;
      res.once("finish", () => req.destroy());
      reject(new OpenAIError(413, `Request body too large: more than ${MAX_BODY_BYTES} bytes.`, null, "request_too_large"));
    });
    req.on("end", () => {
      if (!overflowed) resolve(Buffer.concat(chunks).toString("utf8"));
    });
    req.on("error", reject);
  });
}

function requestId(prefix: string): string {
  return `${prefix}-${randomBytes(12).toString("hex")}`;
}

export async function startEngineServer(options: EngineServerOptions): Promise<EngineServer> {
  const host = options.host ?? "127.0.0.1";
  const model = options.model ?? "meridian-sim-8b";
  const dialect = options.dialect ?? "sglang";
  const cacheReport = options.cacheReport ?? true;
  // Chat keys stand for CHAT_BLOCK_TOKENS tokens: the prefix cache keeps its size in tokens (the
  // paper preset's 2,000 blocks of 512 tokens would otherwise cache 32× less than /metrics reports).
  const params: EngineParams = { ...withBlockTokens(options.params ?? DEMO_ENGINE_PARAMS, CHAT_BLOCK_TOKENS), emitTokenEvents: true };
  const engine = new EngineModel(options.id, params);
  const driver = new EngineDriver(engine);
  const metrics = new EngineMetrics(engine, dialect, model);
  const replies = new ReplyText(options.tokenText);
  const identity = { "x-meridian-engine-id": options.id, "x-meridian-engine-region": options.region };

  async function generate(kind: "chat" | "text", req: IncomingMessage, res: ServerResponse, out: DelayedResponse, arrive: () => Promise<void>): Promise<void> {
    const startedAt = performance.now();
    const raw = await readBody(req, res);
    await arrive();
    if (res.destroyed) return;
    const forced = forcedOutputTokens(req);
    let prompt: PromptView;
    let stream: boolean;
    let includeUsage: boolean;
    let maxRequested: number | undefined;
    if (kind === "chat") {
      const body = parseBody(ChatCompletionBody, raw);
      prompt = chatPrompt(body);
      stream = body.stream === true;
      includeUsage = body.stream_options?.include_usage === true;
      maxRequested = body.max_completion_tokens ?? body.max_tokens ?? undefined;
    } else {
      const body = parseBody(CompletionBody, raw);
      prompt = textPrompt(body);
      stream = body.stream === true;
      includeUsage = body.stream_options?.include_usage === true;
      // SGLang and vLLM both default max_tokens to 16 on /v1/completions, as OpenAI did.
      maxRequested = body.max_tokens ?? body.max_completion_tokens ?? DEFAULT_COMPLETION_MAX_TOKENS;
    }
    const limit = outputLimit(prompt.promptTokens, maxRequested, params.kvCapacityTokens, kind === "chat" ? "messages" : "prompt");
    // The engine stops at its own output cap (standing in for EOS); max_tokens, or without it the
    // context the prompt leaves, can only cut it shorter, and then the reply ends for its length.
    const outputTokens = Math.min(forced ?? params.maxOutputTokens, limit, params.maxOutputTokens);
    const finishReason: FinishReason = outputTokens >= limit ? "length" : "stop";
    const reply = replies.reply(prompt.seed, outputTokens);

    const id = requestId(kind === "chat" ? "chatcmpl" : "cmpl");
    const header: ResponseHeader = { id, created: Math.floor(Date.now() / 1000), model };
    const chunks = new ChunkWriter(kind, header, includeUsage);
    let produced = 0;
    let finished = false;
    res.on("close", () => {
      if (!finished) {
        finished = true;
        driver.cancel(id);
      }
    });
    const emitTokens = (count: number): void => {
      for (let i = 0; i < count; i++) out.write(chunks.content(replies.token(prompt.seed, produced++)));
    };
    driver.submit(
      {
        id,
        blockKeys: prompt.blockKeys,
        inputTokens: prompt.promptTokens,
        maxOutputTokens: outputTokens,
        completionBlockKeys: prompt.completionKeys(reply),
      },
      (event) => {
        if (event.type === "first-token") {
          if (!stream) return;
          out.writeHead(200, {
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-cache",
            connection: "keep-alive",
            ...identity,
          });
          const opening = chunks.opening();
          if (opening !== null) out.write(opening);
          emitTokens(1);
        } else if (event.type === "tokens") {
          if (stream) emitTokens(event.count);
        } else {
          finished = true;
          const tokenUsage = usage(event.promptTokens, event.outputTokens, cacheReport ? event.cachedTokens : null);
          metrics.observeCompleted({
            ttftSec: (event.firstTokenTime - event.submitTime) / 1000,
            e2eSec: (event.time - event.submitTime) / 1000,
            outputTokens: event.outputTokens,
            meanItlSec: event.meanItlMs / 1000,
            finishReason,
          });
          metrics.observeHandlerLatency((performance.now() - startedAt) / 1000);
          if (stream) {
            out.write(chunks.finish(finishReason));
            if (includeUsage) out.write(chunks.usage(tokenUsage));
            out.write(chunks.done());
            out.end();
          } else {
            const body = kind === "chat" ? chatCompletion(header, reply, finishReason, tokenUsage) : textCompletion(header, reply, finishReason, tokenUsage);
            out.json(200, body, identity);
          }
        }
      },
    );
  }

  /** One engine request per input, each a prefill with a single output step; answered when all are done. */
  async function embed(req: IncomingMessage, res: ServerResponse, out: DelayedResponse, arrive: () => Promise<void>): Promise<void> {
    const startedAt = performance.now();
    const raw = await readBody(req, res);
    await arrive();
    if (res.destroyed) return;
    const body = parseBody(EmbeddingsBody, raw);
    const prompts = embeddingPrompts(body, CHARS_PER_TOKEN);
    for (const prompt of prompts) checkInputLength(prompt.promptTokens, params.kvCapacityTokens);
    const id = requestId("embd");
    const results: EmbeddingResult[] = [];
    let pending = prompts.length;
    let finished = false;
    res.on("close", () => {
      if (finished) return;
      finished = true;
      prompts.forEach((_, i) => driver.cancel(`${id}-${i}`));
    });
    prompts.forEach((prompt, i) => {
      const request = {
        id: `${id}-${i}`,
        blockKeys: prompt.blockKeys,
        inputTokens: prompt.promptTokens,
        maxOutputTokens: 1,
        completionBlockKeys: prompt.blockKeys,
      };
      driver.submit(request, (event) => {
        if (event.type !== "done") return;
        results[i] = { prompt, cachedTokens: event.cachedTokens };
        metrics.observeCompleted({
          ttftSec: (event.firstTokenTime - event.submitTime) / 1000,
          e2eSec: (event.time - event.submitTime) / 1000,
          outputTokens: 0,
          meanItlSec: 0,
          finishReason: "stop",
        });
        if (--pending > 0) return;
        finished = true;
        metrics.observeHandlerLatency((performance.now() - startedAt) / 1000);
        out.json(200, embeddingsResponse(body, model, results, cacheReport), identity);
      });
    });
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?", 1)[0] ?? "/";
    const method = req.method ?? "GET";
    const rtt = emulatedRttMs(options.rttMatrix, sourceRegion(req), options.region);
    const out = new DelayedResponse(res, rtt / 2);
    // The inbound half of the RTT, slept once per request: nothing is answered before the request
    // has "arrived", errors included (a 400 or 413 thrown while the body was read or parsed came
    // back after half the RTT, while /health and completions took all of it).
    let arrival: Promise<void> | null = null;
    const arrive = (): Promise<void> => (arrival ??= sleep(rtt / 2));
    try {
      if (method === "POST" && path === "/v1/chat/completions") return await generate("chat", req, res, out, arrive);
      if (method === "POST" && path === "/v1/completions") return await generate("text", req, res, out, arrive);
      if (method === "POST" && path === "/v1/embeddings") return await embed(req, res, out, arrive);
      // Everything else is small: drain any body, then answer after the inbound half of the RTT.
      req.resume();
      await arrive();
      if (method === "GET" && (path === "/health" || path === "/health_generate")) {
        out.json(200, { status: "ok" }, identity);
      } else if (method === "GET" && path === "/metrics") {
        driver.sync();
        const text = metrics.render(driver.now());
        out.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8", "content-length": Buffer.byteLength(text) });
        out.end(text);
      } else if (method === "GET" && path === "/v1/models") {
        out.json(200, {
          object: "list",
          data: [
            {
              id: model,
              object: "model",
              created: Math.floor(Date.now() / 1000),
              owned_by: "meridian-sim",
              root: model,
              max_model_len: params.kvCapacityTokens,
            },
          ],
        });
      } else if (method === "POST" && (path === "/flush_cache" || path === "/reset_prefix_cache")) {
        engine.flushCache();
        out.json(200, { status: "ok", message: "Cache flushed." });
      } else {
        throw new OpenAIError(404, `Invalid URL (${method} ${path})`);
      }
    } catch (error) {
      // A client that hung up mid-upload ("aborted") is no engine fault: nobody is left to answer,
      // and logging it as an internal error made every client timeout look like an engine crash.
      // `req.complete`, not `req.destroyed`: Node 20 marks a request destroyed once its body is
      // read, which turned every internal error (and the 400 for bad content) into a reset.
      if (!req.complete && !(error instanceof OpenAIError)) {
        res.destroy();
        return;
      }
      const failure =
        error instanceof OpenAIError
          ? error
          : error instanceof RoutingInputError
            ? new OpenAIError(400, error.message, error.field, "invalid_value")
            : new OpenAIError(500, "The engine had an internal error.", null, null, "server_error");
      if (failure.status === 500) options.onError?.(error);
      if (out.headersSent) {
        res.destroy();
        return;
      }
      await arrive();
      out.json(failure.status, failure.toBody(), failure.status === 413 ? { connection: "close" } : {});
    }
  }

  const server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => {
      options.onError?.(error);
      res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(":") ? `[${host}]` : host;

  let closing: Promise<void> | null = null;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    engine,
    close(): Promise<void> {
      closing ??= new Promise<void>((resolve) => {
        driver.close();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
