// barajamos-shuffle/v1 (docs/FAIRNESS.md), written again from the spec page in plain JavaScript.
//
// This module is deliberately independent of the Python implementation: it reads nothing from
// the server but the record itself, and uses only WebCrypto (SHA-256, HMAC-SHA256, Ed25519 where
// the browser has it). A player who distrusts the house can read this file, or the spec, and
// rebuild the deck and the deal of any hand in their own browser.

export const VERSION = "barajamos-shuffle/v1";
export const RANKS = "4567QJKA23";
export const SUITS = "CHSD";
export const CANONICAL_DECK = Array.from({ length: 40 }, (_, k) => RANKS[k >> 2] + SUITS[k & 3]);
const SEED_BYTES = 32;
const MAX_CONTRIBUTION = 256;
const MAX_TABLE_BYTES = 128;
const MAX_HAND = 2 ** 32 - 1;
const MAX_ACTIONS = 512;
const MAX_SCORE = 9999;
const MAX_SAFE = 2 ** 53 - 1;
const VARIANTS = ["paulista", "mineiro", "argentino"];
const HAND_FIELDS = [
  "kind", "version", "table", "hand", "chain_start", "variant", "seats", "mode", "dealer",
  "score_before", "commitment", "contributions", "seed", "deck", "deal", "actions", "end",
  "forfeit_team", "score_after", "match_winner", "prev", "key_id", "public_key", "signature",
];

const encoder = new TextEncoder();

/** A record or input that cannot be read at all (the CLI's exit status 2). */
export class UnreadableError extends Error {}

// --- bytes ----------------------------------------------------------------------------------

export function bytesToHex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Lowercase hex only, two digits a byte (FAIRNESS.md 1): uppercase is refused, not folded. */
export function hexToBytes(text) {
  if (typeof text !== "string" || text.length % 2 !== 0 || !/^[0-9a-f]*$/.test(text)) {
    throw new UnreadableError("expected lowercase hexadecimal, two digits per byte");
  }
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i += 1) out[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function utf8(text) {
  return encoder.encode(text);
}

function concat(parts) {
  const size = parts.reduce((sum, p) => sum + p.length, 0);
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function u32(n) {
  return new Uint8Array([(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
}

function lp(bytes) {
  return concat([u32(bytes.length), bytes]);
}

function equalBytes(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

// --- primitives (WebCrypto) ----------------------------------------------------------------

export async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

async function hmacKey(key) {
  return crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
}

export async function hmacSha256(key, message) {
  const k = await hmacKey(key);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, message));
}

/** True / false, or null when this browser has no Ed25519 in WebCrypto. */
export async function ed25519Verify(publicKey, signature, message) {
  let key;
  try {
    key = await crypto.subtle.importKey("raw", publicKey, { name: "Ed25519" }, false, ["verify"]);
  } catch (err) {
    if (err && err.name === "NotSupportedError") return null;
    return false; // the browser knows Ed25519 but this is no valid public key
  }
  try {
    return await crypto.subtle.verify({ name: "Ed25519" }, key, signature, message);
  } catch (err) {
    if (err && err.name === "NotSupportedError") return null;
    return false;
  }
}

export async function ed25519Supported() {
  // RFC 8032's first test key: if it imports, the browser verifies Ed25519 itself.
  const pub = hexToBytes("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
  try {
    await crypto.subtle.importKey("raw", pub, { name: "Ed25519" }, false, ["verify"]);
    return true;
  } catch {
    return false;
  }
}

// --- derivation (FAIRNESS.md 5) --------------------------------------------------------------

function checkSeats(seats) {
  if (seats !== 2 && seats !== 4) throw new RangeError(`seats must be 2 or 4, not ${seats}`);
}

function tableBytes(table) {
  if (typeof table !== "string" || /[\u0000-\u001f\u007f]/.test(table)) {
    throw new RangeError("the table id is a text without control characters");
  }
  const bytes = utf8(table);
  if (bytes.length < 1 || bytes.length > MAX_TABLE_BYTES) {
    throw new RangeError(`the table id must be 1..${MAX_TABLE_BYTES} UTF-8 bytes`);
  }
  return bytes;
}

function checkHand(hand) {
  if (!Number.isInteger(hand) || hand < 1 || hand > MAX_HAND) {
    throw new RangeError(`the hand number must be in 1..${MAX_HAND}`);
  }
}

/** P of section 5.1: u8(n) then each seat's contribution, absent encoded apart from any bytes. */
function contributionsField(contributions) {
  checkSeats(contributions.length);
  const parts = [new Uint8Array([contributions.length])];
  for (const c of contributions) {
    if (c === null) {
      parts.push(new Uint8Array([0]));
    } else {
      if (c.length < 1 || c.length > MAX_CONTRIBUTION) {
        throw new RangeError(`a contribution is 1..${MAX_CONTRIBUTION} bytes`);
      }
      parts.push(new Uint8Array([1]), lp(c));
    }
  }
  return concat(parts);
}

/** M("deck") of section 5.1; contributions are Uint8Array or null (absent), in seat order. */
export function deckMessage(table, hand, contributions) {
  checkHand(hand);
  return concat([lp(utf8(VERSION)), lp(utf8("deck")), lp(tableBytes(table)), u32(hand),
    contributionsField(contributions)]);
}

/** M("first-dealer"): no hand number, its seed (a match's first hand's) is unique already. */
export function firstDealerMessage(table, contributions) {
  return concat([lp(utf8(VERSION)), lp(utf8("first-dealer")), lp(tableBytes(table)),
    contributionsField(contributions)]);
}

/** The HMAC byte stream of 5.2, read one byte at a time; rejected bytes are kept for display. */
class ByteStream {
  constructor(key, msg) {
    this.key = key;
    this.msg = msg;
    this.counter = 0;
    this.block = new Uint8Array(0);
    this.position = 0;
    this.offset = 0;
  }

  async next() {
    if (this.position === this.block.length) {
      const sig = await crypto.subtle.sign("HMAC", this.key, concat([this.msg, u32(this.counter)]));
      this.block = new Uint8Array(sig);
      this.counter += 1;
      this.position = 0;
    }
    this.offset += 1;
    const byte = this.block[this.position];
    this.position += 1;
    return byte;
  }

  /** Uniform in [0, m - 1] (5.3): bytes at or above the largest multiple of m are rejected. */
  async draw(m, rejected) {
    const bound = 256 - (256 % m);
    for (;;) {
      const b = await this.next();
      if (b < bound) return b % m;
      if (rejected) rejected.push({ offset: this.offset - 1, byte: b, modulus: m, bound });
    }
  }
}

function checkSeed(seed) {
  if (!(seed instanceof Uint8Array) || seed.length !== SEED_BYTES) {
    throw new RangeError(`a seed is exactly ${SEED_BYTES} bytes`);
  }
}

/** The deck of a hand, top first (5.4), with the stream's bytes read and rejected. */
export async function shuffleTrace(seed, table, hand, contributions) {
  checkSeed(seed);
  const stream = new ByteStream(await hmacKey(seed), deckMessage(table, hand, contributions));
  const order = Array.from({ length: 40 }, (_, i) => i);
  const rejected = [];
  for (let i = 39; i >= 1; i -= 1) {
    const j = await stream.draw(i + 1, rejected); // j in [0, i]: i included (not Sattolo)
    [order[i], order[j]] = [order[j], order[i]];
  }
  return { deck: order.map((k) => CANONICAL_DECK[k]), bytesRead: stream.offset, rejected };
}

export async function deriveDeck(seed, table, hand, contributions) {
  return (await shuffleTrace(seed, table, hand, contributions)).deck;
}

/** 5.6: the first dealer, from the stream of M("first-dealer"). */
export async function drawFirstDealer(seed, table, contributions) {
  checkSeed(seed);
  const stream = new ByteStream(await hmacKey(seed), firstDealerMessage(table, contributions));
  return stream.draw(contributions.length, null);
}

/** 5.5: one card at a time from mano, three passes; Paulista turns the next card as the vira. */
export function dealCards(deck, variant, seats, dealer) {
  checkSeats(seats);
  const mano = (dealer + 1) % seats;
  const hands = Array.from({ length: seats }, () => []);
  for (let pass = 0; pass < 3; pass += 1) {
    for (let place = 0; place < seats; place += 1) {
      hands[(mano + place) % seats].push(deck[pass * seats + place]);
    }
  }
  return { hands, vira: variant === "paulista" ? deck[3 * seats] : null };
}

// --- canonical JSON (section 6) -----------------------------------------------------------

/**
 * A strict JSON reader: like JSON.parse, but duplicate keys, numbers with a fraction or an
 * exponent, minus zero and integers beyond 2^53 - 1 make the input unreadable, as the spec says.
 */
export function parseStrict(text) {
  let at = 0;
  const fail = (what) => {
    throw new UnreadableError(`not canonical-compatible JSON at character ${at}: ${what}`);
  };
  const ws = () => {
    while (at < text.length && " \t\n\r".includes(text[at])) at += 1;
  };
  const value = () => {
    ws();
    const ch = text[at];
    if (ch === "{") return object();
    if (ch === "[") return array();
    if (ch === '"') return string();
    if (ch === "-" || (ch >= "0" && ch <= "9")) return number();
    for (const [word, val] of [["true", true], ["false", false], ["null", null]]) {
      if (text.startsWith(word, at)) {
        at += word.length;
        return val;
      }
    }
    return fail(ch === undefined ? "unexpected end" : `unexpected ${JSON.stringify(ch)}`);
  };
  const object = () => {
    at += 1;
    const out = {};
    const seen = new Set();
    ws();
    if (text[at] === "}") {
      at += 1;
      return out;
    }
    for (;;) {
      ws();
      if (text[at] !== '"') fail("expected a key");
      const key = string();
      if (seen.has(key)) fail(`duplicate key ${JSON.stringify(key)}`);
      seen.add(key);
      ws();
      if (text[at] !== ":") fail("expected ':'");
      at += 1;
      Object.defineProperty(out, key, { value: value(), enumerable: true, writable: true });
      ws();
      if (text[at] === ",") {
        at += 1;
      } else if (text[at] === "}") {
        at += 1;
        return out;
      } else {
        fail("expected ',' or '}'");
      }
    }
  };
  const array = () => {
    at += 1;
    const out = [];
    ws();
    if (text[at] === "]") {
      at += 1;
      return out;
    }
    for (;;) {
      out.push(value());
      ws();
      if (text[at] === ",") {
        at += 1;
      } else if (text[at] === "]") {
        at += 1;
        return out;
      } else {
        fail("expected ',' or ']'");
      }
    }
  };
  const string = () => {
    const m = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/.exec(text.slice(at));
    if (!m) fail("bad string");
    at += m[0].length;
    return JSON.parse(m[0]);
  };
  const number = () => {
    const m = /^-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(at));
    if (!m) fail("bad number");
    if (m[1] !== undefined || m[2] !== undefined) fail("only integers are allowed");
    if (m[0] === "-0") fail("minus zero is not allowed");
    const n = Number(m[0]);
    if (!Number.isSafeInteger(n)) fail("integer beyond 2^53 - 1");
    at += m[0].length;
    return n;
  };
  const result = value();
  ws();
  if (at !== text.length) fail("trailing characters");
  return result;
}

/** Canonical JSON bytes: keys sorted, no whitespace, integers only, JSON.stringify's strings. */
export function canonicalJSON(value) {
  const walk = (v) => {
    if (v === null || typeof v === "boolean") return JSON.stringify(v);
    if (typeof v === "number") {
      if (!Number.isSafeInteger(v) || Object.is(v, -0)) {
        throw new UnreadableError(`${v} is not an integer canonical JSON can hold`);
      }
      return String(v);
    }
    if (typeof v === "string") {
      if (!v.isWellFormed()) throw new UnreadableError("unpaired surrogate in a string");
      return JSON.stringify(v);
    }
    if (Array.isArray(v)) return `[${v.map(walk).join(",")}]`;
    if (typeof v === "object") {
      const keys = Object.keys(v);
      for (const k of keys) {
        if (!/^[\x00-\x7f]*$/.test(k)) throw new UnreadableError(`object key ${k} is not ASCII`);
      }
      // ASCII keys: sorting UTF-16 code units is sorting bytes
      keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      return `{${keys.map((k) => `${JSON.stringify(k)}:${walk(v[k])}`).join(",")}}`;
    }
    throw new UnreadableError(`${typeof v} is not allowed in canonical JSON`);
  };
  return utf8(walk(value));
}

export async function keyIdFor(publicKey) {
  return bytesToHex((await sha256(publicKey)).slice(0, 8));
}

// --- the hand record (sections 7 and 9) -------------------------------------------------------

function isInt(v, low, high) {
  return Number.isInteger(v) && v >= low && v <= high;
}

function isCard(v) {
  return typeof v === "string" && CANONICAL_DECK.includes(v);
}

function hexOf(v, path, low, high = low) {
  if (typeof v !== "string" || !/^[0-9a-f]*$/.test(v) || v.length % 2 !== 0) {
    throw new UnreadableError(`${path}: expected lowercase hexadecimal, two digits per byte`);
  }
  const size = v.length / 2;
  if (size < low || size > high) {
    const want = low === high ? `${low}` : `${low}..${high}`;
    throw new UnreadableError(`${path}: expected ${want} bytes, got ${size}`);
  }
  return hexToBytes(v);
}

/** Check 1 (`structure`): exact fields, types and sizes; throws UnreadableError naming where. */
export function checkStructure(record) {
  const need = (ok, path, what) => {
    if (!ok) throw new UnreadableError(`${path}: ${what}`);
  };
  need(record !== null && typeof record === "object" && !Array.isArray(record), "$", "expected an object");
  need(record.version === VERSION, "$.version", `unknown version (this verifier knows ${VERSION})`);
  need(record.kind === "hand", "$.kind", "expected 'hand'");
  const keys = Object.keys(record);
  const missing = HAND_FIELDS.filter((k) => !keys.includes(k));
  need(missing.length === 0, "$", `missing field(s): ${missing.join(", ")}`);
  const unknown = keys.filter((k) => !HAND_FIELDS.includes(k));
  need(unknown.length === 0, "$", `unknown field(s): ${unknown.join(", ")}`);
  const r = record;
  need(typeof r.table === "string" && utf8(r.table).length >= 1 && utf8(r.table).length <= MAX_TABLE_BYTES
    && !/[\u0000-\u001f\u007f]/.test(r.table), "$.table", "expected a table id of 1..128 UTF-8 bytes");
  need(isInt(r.hand, 1, MAX_HAND), "$.hand", "expected an integer in 1..2^32-1");
  need(isInt(r.chain_start, 1, r.hand), "$.chain_start", "expected an integer in 1..hand");
  need(VARIANTS.includes(r.variant), "$.variant", "expected paulista, mineiro or argentino");
  need(r.seats === 2 || r.seats === 4, "$.seats", "expected 2 or 4");
  need(r.mode === "vote" || r.mode === "first", "$.mode", "expected 'vote' or 'first'");
  const d = r.dealer;
  need(d !== null && typeof d === "object" && !Array.isArray(d)
    && Object.keys(d).sort().join(",") === "by,seat", "$.dealer", "expected {seat, by}");
  need(isInt(d.seat, 0, r.seats - 1), "$.dealer.seat", "expected a seat number");
  need(d.by === "draw" || d.by === "rotation", "$.dealer.by", "expected 'draw' or 'rotation'");
  for (const key of ["score_before", "score_after"]) {
    const s = r[key];
    need(Array.isArray(s) && s.length === 2 && s.every((x) => isInt(x, 0, MAX_SCORE)),
      `$.${key}`, "expected [team0, team1], integers 0..9999");
  }
  need(d.by !== "draw" || (r.score_before[0] === 0 && r.score_before[1] === 0),
    "$.score_before", "a match's first hand (dealer drawn) starts at [0, 0]");
  hexOf(r.commitment, "$.commitment", 32);
  need(Array.isArray(r.contributions) && r.contributions.length === r.seats,
    "$.contributions", `expected ${r.seats} entries`);
  r.contributions.forEach((c, i) => {
    if (c !== null) hexOf(c, `$.contributions[${i}]`, 1, MAX_CONTRIBUTION);
  });
  hexOf(r.seed, "$.seed", 32);
  need(Array.isArray(r.deck) && r.deck.length === 40 && r.deck.every(isCard), "$.deck", "expected 40 cards");
  const deal = r.deal;
  need(deal !== null && typeof deal === "object" && !Array.isArray(deal)
    && Object.keys(deal).sort().join(",") === "hands,vira", "$.deal", "expected {hands, vira}");
  need(Array.isArray(deal.hands) && deal.hands.length === r.seats
    && deal.hands.every((h) => Array.isArray(h) && h.length === 3 && h.every(isCard)),
    "$.deal.hands", `expected ${r.seats} hands of 3 cards`);
  need(r.variant === "paulista" ? isCard(deal.vira) : deal.vira === null, "$.deal.vira",
    r.variant === "paulista" ? "expected a card" : `${r.variant} has no vira: expected null`);
  need(Array.isArray(r.actions) && r.actions.length <= MAX_ACTIONS, "$.actions",
    `expected a list of at most ${MAX_ACTIONS} actions`);
  r.actions.forEach((a, i) => {
    need(a !== null && typeof a === "object" && !Array.isArray(a) && isInt(a.seat, 0, r.seats - 1)
      && typeof a.do === "string", `$.actions[${i}]`, "expected {seat, do, ...}");
  });
  need(["completed", "abandonment", "cancelled"].includes(r.end), "$.end",
    "expected completed, abandonment or cancelled");
  need(r.forfeit_team === null || isInt(r.forfeit_team, 0, 1), "$.forfeit_team", "expected 0, 1 or null");
  need((r.end === "abandonment") === (r.forfeit_team !== null), "$.forfeit_team",
    "names the abandoning team exactly when end is 'abandonment'");
  need(r.match_winner === null || isInt(r.match_winner, 0, 1), "$.match_winner", "expected 0, 1 or null");
  hexOf(r.prev, "$.prev", 32);
  hexOf(r.key_id, "$.key_id", 8);
  hexOf(r.public_key, "$.public_key", 32);
  hexOf(r.signature, "$.signature", 64);
}

/** What the signature covers: the canonical JSON of the record without `signature`. */
export function signedBytes(record) {
  const copy = { ...record };
  delete copy.signature;
  return canonicalJSON(copy);
}

/** SHA-256 of the whole record's canonical bytes: what the table's next record names in `prev`. */
export async function recordHash(record) {
  return bytesToHex(await sha256(canonicalJSON(record)));
}

function contributionBytes(record) {
  return record.contributions.map((c) => (c === null ? null : hexToBytes(c)));
}

/**
 * Checks 1-7 and 9 of FAIRNESS.md 9 on one record; `replay` is the engine's job (the CLI).
 *
 * `record` is the text of the file (parsed strictly here) or an already parsed object.
 * Options: `pinnedKey` (hex), `mine` (my contribution, hex).
 * Returns {readable, error, checks: [{name, status: pass|fail|warn|skip, detail}], record, deck,
 * deal}; `readable` is false (and `error` says why) when the input is not a record at all.
 */
export async function verifyHandRecord(input, { pinnedKey = null, mine = null } = {}) {
  let record;
  try {
    record = typeof input === "string" ? parseStrict(input) : input;
    checkStructure(record);
  } catch (err) {
    if (err instanceof UnreadableError || err instanceof SyntaxError) {
      return { readable: false, error: err.message, checks: [{ name: "structure", status: "fail", detail: err.message }] };
    }
    throw err;
  }
  const checks = [{ name: "structure", status: "pass", detail: "every field present, well typed, version " + VERSION }];
  const add = (name, ok, passDetail, failDetail) =>
    checks.push({ name, status: ok ? "pass" : "fail", detail: ok ? passDetail : failDetail });

  // 2. key
  const publicKey = hexToBytes(record.public_key);
  const keyId = await keyIdFor(publicKey);
  if (keyId !== record.key_id) {
    add("key", false, "", `key_id ${record.key_id} is not the id of the public key (${keyId})`);
  } else if (pinnedKey === null) {
    checks.push({ name: "key", status: "warn", detail: `key not pinned: using the record's own key ${keyId}` });
  } else {
    add("key", pinnedKey === record.public_key, `signed by the pinned house key ${keyId}`,
      `signed by ${keyId}, not by the pinned house key`);
  }

  // 3. signature
  const verdict = await ed25519Verify(publicKey, hexToBytes(record.signature), signedBytes(record));
  if (verdict === null) {
    checks.push({ name: "signature", status: "skip",
      detail: "this browser has no Ed25519 in WebCrypto: the signature is checked by the CLI" });
  } else {
    add("signature", verdict, "the Ed25519 signature verifies over the record",
      "the Ed25519 signature does not verify: the record was changed after signing");
  }

  // 4. commitment
  const seed = hexToBytes(record.seed);
  const committed = bytesToHex(await sha256(seed));
  add("commitment", committed === record.commitment, "SHA-256(seed) equals the commitment",
    `SHA-256(seed) is ${committed}, the commitment says ${record.commitment}`);

  // 5. deck
  const contributions = contributionBytes(record);
  const trace = await shuffleTrace(seed, record.table, record.hand, contributions);
  const deckDiff = trace.deck.findIndex((card, i) => card !== record.deck[i]);
  add("deck", deckDiff === -1, `the deck rebuilt from seed and contributions matches (${trace.bytesRead} stream bytes, ${trace.rejected.length} rejected)`,
    `the rebuilt deck differs at position ${deckDiff}: ${trace.deck[deckDiff]} rebuilt, ${record.deck[deckDiff]} recorded`);

  // 6. dealer
  if (record.dealer.by === "draw") {
    const drawn = await drawFirstDealer(seed, record.table, contributions);
    add("dealer", drawn === record.dealer.seat, `the first-dealer draw gives seat ${drawn}`,
      `the first-dealer draw gives seat ${drawn}, the record says ${record.dealer.seat}`);
  } else {
    checks.push({ name: "dealer", status: "pass", detail: "dealer by rotation (checked along the chain)" });
  }

  // 7. deal
  const deal = dealCards(trace.deck, record.variant, record.seats, record.dealer.seat);
  const sameCards = (a, b) => a.length === b.length && a.every((card, i) => card === b[i]);
  const dealOk = deal.vira === record.deal.vira
    && deal.hands.every((cards, seat) => sameCards(cards, record.deal.hands[seat]));
  add("deal", dealOk, "dealing the rebuilt deck gives exactly the recorded hands" + (deal.vira ? " and vira" : ""),
    "the recorded hands or vira are not what the rebuilt deck deals");

  // 8. replay: rules replay needs the engine
  checks.push({ name: "replay", status: "skip", detail: "the rules replay runs in the CLI (barajamos-verify hand)" });

  // 9. mine
  if (mine !== null) {
    const seat = record.contributions.indexOf(mine);
    add("mine", seat !== -1, `my contribution is in the record, at seat ${seat}`,
      "my contribution is not in the record");
  }
  return { readable: true, error: null, checks, record, deck: trace.deck, deal, rejected: trace.rejected };
}
