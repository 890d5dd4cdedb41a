// Deterministic reply text: one word per generated token, chosen from the prompt's hash, so the same
// prompt always gets the same reply. That keeps the next turn (prompt + this reply) a prefix match of
// what the engine cached at completion, exactly as with a real engine and greedy decoding.

const DEFAULT_WORDS = (
  "the of and to in is it for on as at by an be or we can not this that with from have will are was " +
  "you all new more one two each many some time way day part sea sky sun map road tree rock wind rain " +
  "snow light river stone field cloud north south east west route node path cache block token queue"
).split(" ");

export class ReplyText {
  private readonly words: readonly string[];

  /** `tokenText`: optional text whose words replace the built-in vocabulary. */
  constructor(tokenText?: string) {
    const words = tokenText?.split(/\s+/).filter((word) => word.length > 0) ?? [];
    this.words = words.length > 0 ? words : DEFAULT_WORDS;
  }

  /** The text of token `index` of the reply seeded by `seed`: a word, space-separated after the first. */
  token(seed: number, index: number): string {
    let h = Math.imul((seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0, 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
    const word = this.words[(h >>> 0) % this.words.length]!;
    return index === 0 ? word : ` ${word}`;
  }

  /** The whole reply of `count` tokens. */
  reply(seed: number, count: number): string {
    let text = "";
    for (let i = 0; i < count; i++) text += this.token(seed, i);
    return text;
  }
}
