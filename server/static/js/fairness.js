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

/** A value quoted in a verdict: its first characters only, as the CLI quotes (FAIRNESS.md 9). */
export function clip(text, limit = 40) {
  const value = String(text);
  return value.length <= limit ? value : `${value.slice(0, limit)}…`;
}

/** A record or input that cannot be read at all (the CLI's exit status 2); its message, why,
 * at most 300 characters, as the CLI's. */
export class UnreadableError extends Error {
  constructor(message) {
    super(clip(message, 300));
  }
}

// --- bytes ----------------------------------------------------------------------------------

export function bytesToHex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Lowercase hex only, two digits a byte (FAIRNESS.md 1): uppercase is refused, not folded. */
export function hexToBytes(text) {
  if (typeof text !== "string" || text.length % 2 !== 0 || !/^[0-9a-f]*$/.test(text)) {
    throw new UnreadableError("esperava hexadecimal minúsculo, dois dígitos por byte");
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

// The points of small order (libsodium's list, each compared without its sign bit): a public key
// or a signature's R among them verifies messages nobody signed (the identity key, say, with R the
// identity and S = 0, "signs" every message). WebCrypto accepts them; libsodium, which the CLI
// uses through PyNaCl, refuses them: so does this verifier.
const SMALL_ORDER = [
  "0000000000000000000000000000000000000000000000000000000000000000",
  "0100000000000000000000000000000000000000000000000000000000000000",
  "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
  "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
  "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
].map(hexToBytes);

function hasSmallOrder(point) {
  return SMALL_ORDER.some((bad) => bad.every((byte, i) => byte === (i === 31 ? point[i] & 0x7f : point[i])));
}

/** libsodium's ge25519_is_canonical: y below the field's prime p = 2^255 - 19. */
function isCanonicalPoint(point) {
  const top = (point[31] & 0x7f) === 0x7f && point.slice(1, 31).every((b) => b === 0xff);
  return !(top && point[0] >= 0xed);
}

/** True / false, or null when this browser has no Ed25519 in WebCrypto. */
export async function ed25519Verify(publicKey, signature, message) {
  if (publicKey.length !== 32 || signature.length !== 64 || hasSmallOrder(publicKey)
      || !isCanonicalPoint(publicKey) || hasSmallOrder(signature.subarray(0, 32))) {
    return false;
  }
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
    throw new UnreadableError(`JSON inválido no caractere ${at}: ${what}`);
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
    return fail(ch === undefined ? "fim inesperado" : `${JSON.stringify(ch)} inesperado`);
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
      if (text[at] !== '"') fail("esperava uma chave");
      const key = string();
      if (seen.has(key)) fail(`chave duplicada ${clip(JSON.stringify(key))}`);
      seen.add(key);
      ws();
      if (text[at] !== ":") fail("esperava ':'");
      at += 1;
      Object.defineProperty(out, key, { value: value(), enumerable: true, writable: true });
      ws();
      if (text[at] === ",") {
        at += 1;
      } else if (text[at] === "}") {
        at += 1;
        return out;
      } else {
        fail("esperava ',' ou '}'");
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
        fail("esperava ',' ou ']'");
      }
    }
  };
  const string = () => {
    const m = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/.exec(text.slice(at));
    if (!m) fail("texto mal formado");
    at += m[0].length;
    return JSON.parse(m[0]);
  };
  const number = () => {
    const m = /^-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(at));
    if (!m) fail("número mal formado");
    if (m[1] !== undefined || m[2] !== undefined) fail("só números inteiros são permitidos (sem fração nem expoente)");
    if (m[0] === "-0") fail("menos zero não é permitido");
    const n = Number(m[0]);
    if (!Number.isSafeInteger(n)) fail("inteiro além de 2^53 - 1");
    at += m[0].length;
    return n;
  };
  const result = value();
  ws();
  if (at !== text.length) fail("há caracteres depois do fim");
  return result;
}

/** Canonical JSON bytes: keys sorted, no whitespace, integers only, JSON.stringify's strings. */
export function canonicalJSON(value) {
  const walk = (v) => {
    if (v === null || typeof v === "boolean") return JSON.stringify(v);
    if (typeof v === "number") {
      if (!Number.isSafeInteger(v) || Object.is(v, -0)) {
        throw new UnreadableError(`${v} não é um inteiro que o JSON canônico aceite`);
      }
      return String(v);
    }
    if (typeof v === "string") {
      if (!v.isWellFormed()) throw new UnreadableError("texto com surrogate sem par");
      return JSON.stringify(v);
    }
    if (Array.isArray(v)) return `[${v.map(walk).join(",")}]`;
    if (typeof v === "object") {
      const keys = Object.keys(v);
      for (const k of keys) {
        if (!/^[\x00-\x7f]*$/.test(k)) throw new UnreadableError(`a chave ${k} não é ASCII`);
      }
      // ASCII keys: sorting UTF-16 code units is sorting bytes
      keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      return `{${keys.map((k) => `${JSON.stringify(k)}:${walk(v[k])}`).join(",")}}`;
    }
    throw new UnreadableError(`${typeof v} não é permitido no JSON canônico`);
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
    throw new UnreadableError(`${path}: esperava hexadecimal minúsculo, dois dígitos por byte`);
  }
  const size = v.length / 2;
  if (size < low || size > high) {
    const want = low === high ? `${low}` : `${low}..${high}`;
    throw new UnreadableError(`${path}: esperava ${want} bytes, veio ${size}`);
  }
  return hexToBytes(v);
}

/** A seat in a record's own terms: counted from 0 (the pages say "lugar 1" for seat 0). */
const seatExpected = (seats) => `esperava um lugar de 0 a ${seats - 1} (o registro conta os lugares a partir de 0)`;

const VERBS = ["play", "raise", "accept", "decline", "envido", "real_envido", "falta_envido", "fold", "timeout"];
const ACTION_FIELDS = ["seat", "do", "card", "covered", "position"];

/**
 * What is wrong with an action's form (null when nothing), FAIRNESS.md 7: `seat` and one of the
 * nine verbs; a `play` has a `card` (and `"covered": true` when covered) or a `position` (0..2)
 * alone, never both, a blind play never covered; the other verbs have nothing else; defaults are
 * left out (no `"covered": false`, no `"position": null`). The CLI refuses the same as unreadable;
 * whether the action fits the hand is the replay's (the CLI's).
 */
function actionProblem(a) {
  if (a === null || typeof a !== "object" || Array.isArray(a)) return "esperava uma ação {seat, do, ...}";
  const extra = Object.keys(a).filter((k) => !ACTION_FIELDS.includes(k));
  if (extra.length) return `campo(s) desconhecido(s) na ação: ${extra.join(", ")}`;
  const has = (k) => Object.hasOwn(a, k);
  if (!has("seat") || !Number.isInteger(a.seat) || a.seat < 0) return "esperava o lugar (seat) da ação, um inteiro de 0 em diante";
  if (!has("do") || !VERBS.includes(a.do)) {
    return `verbo (do) desconhecido: ${has("do") ? clip(JSON.stringify(a.do)) : "nenhum"} (esperava ${VERBS.join(", ")})`;
  }
  if (has("card") && !isCard(a.card)) return "card: esperava uma carta, como \"7H\"";
  if (has("covered") && a.covered !== true) {
    return a.covered === false ? "\"covered\": false não se escreve (o padrão fica de fora: cada ação tem uma forma só)"
      : "covered: só pode ser true";
  }
  if (has("position") && !isInt(a.position, 0, 2)) {
    return a.position === null ? "\"position\": null não se escreve (o padrão fica de fora: cada ação tem uma forma só)"
      : "position: esperava 0, 1 ou 2";
  }
  if (a.do !== "play") {
    return has("card") || has("covered") || has("position") ? `'${a.do}' não leva card, covered nem position` : null;
  }
  if (has("card") && has("position")) return "uma jogada nomeia uma carta (card) ou uma posição (position), não as duas";
  if (!has("card") && !has("position")) return "uma jogada (play) precisa de uma carta (card), ou de uma posição (position) na mão de ferro";
  if (has("position") && has("covered")) return "uma jogada às cegas (por posição) nunca é coberta: a mão de ferro não tem carta coberta";
  return null;
}

/** Check 1 (`structure`): exact fields, types and sizes; throws UnreadableError naming where. */
export function checkStructure(record) {
  const need = (ok, path, what) => {
    if (!ok) throw new UnreadableError(`${path}: ${what}`);
  };
  need(record !== null && typeof record === "object" && !Array.isArray(record), "$", "esperava um objeto");
  need(record.version === VERSION, "$.version", `versão desconhecida (este verificador conhece ${VERSION})`);
  need(record.kind === "hand", "$.kind", "esperava 'hand' (um registro de mão)");
  const keys = Object.keys(record);
  const missing = HAND_FIELDS.filter((k) => !keys.includes(k));
  need(missing.length === 0, "$", `campo(s) faltando: ${missing.join(", ")}`);
  const unknown = keys.filter((k) => !HAND_FIELDS.includes(k));
  need(unknown.length === 0, "$", `campo(s) desconhecido(s): ${unknown.slice(0, 5).map((k) => clip(k)).join(", ")}`);
  const r = record;
  // FAIRNESS.md 6: a lone surrogate has no UTF-8 bytes, so no canonical form: unreadable, as the CLI says
  need(typeof r.table !== "string" || r.table.isWellFormed(), "$.table",
    "o id da mesa não é um texto Unicode válido (tem um surrogate sem par)");
  need(typeof r.table === "string" && utf8(r.table).length >= 1 && utf8(r.table).length <= MAX_TABLE_BYTES
    && !/[\u0000-\u001f\u007f]/.test(r.table), "$.table", "esperava um id de mesa de 1 a 128 bytes UTF-8, sem caracteres de controle");
  need(isInt(r.hand, 1, MAX_HAND), "$.hand", "esperava um inteiro de 1 a 2^32-1");
  need(isInt(r.chain_start, 1, r.hand), "$.chain_start", "esperava um inteiro de 1 até o número da mão");
  need(VARIANTS.includes(r.variant), "$.variant", "esperava paulista, mineiro ou argentino");
  need(r.seats === 2 || r.seats === 4, "$.seats", "esperava 2 ou 4");
  need(r.mode === "vote" || r.mode === "first", "$.mode", "esperava 'vote' ou 'first'");
  const d = r.dealer;
  need(d !== null && typeof d === "object" && !Array.isArray(d)
    && Object.keys(d).sort().join(",") === "by,seat", "$.dealer", "esperava {seat, by}");
  need(isInt(d.seat, 0, r.seats - 1), "$.dealer.seat", seatExpected(r.seats));
  need(d.by === "draw" || d.by === "rotation", "$.dealer.by", "esperava 'draw' ou 'rotation'");
  for (const key of ["score_before", "score_after"]) {
    const s = r[key];
    need(Array.isArray(s) && s.length === 2 && s.every((x) => isInt(x, 0, MAX_SCORE)),
      `$.${key}`, "esperava [dupla0, dupla1], inteiros de 0 a 9999");
  }
  need(d.by !== "draw" || (r.score_before[0] === 0 && r.score_before[1] === 0),
    "$.score_before", "a primeira mão de uma partida (quem dá sorteado) começa em [0, 0]");
  hexOf(r.commitment, "$.commitment", 32);
  need(Array.isArray(r.contributions) && r.contributions.length === r.seats,
    "$.contributions", `esperava ${r.seats} entradas`);
  r.contributions.forEach((c, i) => {
    if (c !== null) hexOf(c, `$.contributions[${i}]`, 1, MAX_CONTRIBUTION);
  });
  hexOf(r.seed, "$.seed", 32);
  need(Array.isArray(r.deck) && r.deck.length === 40 && r.deck.every(isCard), "$.deck", "esperava as 40 cartas");
  const deal = r.deal;
  need(deal !== null && typeof deal === "object" && !Array.isArray(deal)
    && Object.keys(deal).sort().join(",") === "hands,vira", "$.deal", "esperava {hands, vira}");
  need(Array.isArray(deal.hands) && deal.hands.length === r.seats
    && deal.hands.every((h) => Array.isArray(h) && h.length === 3 && h.every(isCard)),
    "$.deal.hands", `esperava ${r.seats} mãos de 3 cartas`);
  need(r.variant === "paulista" ? isCard(deal.vira) : deal.vira === null, "$.deal.vira",
    r.variant === "paulista" ? "esperava uma carta" : `${r.variant} não tem vira: esperava null`);
  need(Array.isArray(r.actions) && r.actions.length <= MAX_ACTIONS, "$.actions",
    `esperava uma lista de no máximo ${MAX_ACTIONS} ações`);
  r.actions.forEach((a, i) => {
    const problem = actionProblem(a);
    need(problem === null, `$.actions[${i}]`, problem);
    need(a.seat < r.seats, `$.actions[${i}].seat`, `${seatExpected(r.seats)}, não ${a.seat}`);
  });
  need(["completed", "abandonment", "cancelled"].includes(r.end), "$.end",
    "esperava completed, abandonment ou cancelled");
  need(r.forfeit_team === null || isInt(r.forfeit_team, 0, 1), "$.forfeit_team", "esperava 0, 1 ou null");
  need((r.end === "abandonment") === (r.forfeit_team !== null), "$.forfeit_team",
    "nomeia a dupla que abandonou exatamente quando end é 'abandonment'");
  need(r.match_winner === null || isInt(r.match_winner, 0, 1), "$.match_winner", "esperava 0, 1 ou null");
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

/**
 * The Ed25519 signature of a signed record or statement (section 8): true / false, or null when
 * the browser cannot check Ed25519. False also when `key_id` is not the id of `public_key`.
 */
export async function verifySignature(obj) {
  try {
    const publicKey = hexOf(obj.public_key, "$.public_key", 32);
    const signature = hexOf(obj.signature, "$.signature", 64);
    if (await keyIdFor(publicKey) !== obj.key_id) return false;
    return await ed25519Verify(publicKey, signature, signedBytes(obj));
  } catch (err) {
    if (err instanceof UnreadableError) return false;
    throw err;
  }
}

// --- the house's key lineage (sections 8 and 9) --------------------------------------------

const HANDOVER_FIELDS = ["kind", "version", "at", "new_key_id", "new_public_key", "key_id", "public_key", "signature"];

/** What is wrong with a `key_handover` statement's form (null when nothing): its signature aside. */
async function handoverProblem(s) {
  if (s === null || typeof s !== "object" || Array.isArray(s)) return "não é uma declaração";
  if (s.kind !== "key_handover" || s.version !== VERSION) return `não é uma passagem de chave (key_handover) ${VERSION}`;
  const keys = Object.keys(s);
  if (keys.length !== HANDOVER_FIELDS.length || !HANDOVER_FIELDS.every((k) => keys.includes(k))) {
    return `esperava exatamente os campos ${HANDOVER_FIELDS.join(", ")}`;
  }
  if (!isInt(s.at, 0, MAX_SAFE)) return "at: esperava um inteiro (segundos unix)";
  try {
    const newKey = hexOf(s.new_public_key, "new_public_key", 32);
    hexOf(s.new_key_id, "new_key_id", 8);
    const oldKey = hexOf(s.public_key, "public_key", 32);
    hexOf(s.key_id, "key_id", 8);
    hexOf(s.signature, "signature", 64);
    if (await keyIdFor(newKey) !== s.new_key_id) return `new_key_id ${s.new_key_id} não é o id de new_public_key (${await keyIdFor(newKey)})`;
    if (await keyIdFor(oldKey) !== s.key_id) return `key_id ${s.key_id} não é o id de public_key (${await keyIdFor(oldKey)})`;
  } catch (err) {
    if (err instanceof UnreadableError) return err.message;
    throw err;
  }
  return null;
}

/**
 * The keys the house signs with: `current` (its published key, hex) and every older key that
 * handed over to a trusted one, directly or through a sequence of hand-overs (section 8, trust
 * followed backwards from the current key). `handovers` are the `key_handover` statements the
 * house publishes with its key (/api/key); take them from there only: a hand-over signed by some
 * key X proves that X's holder agreed, not that the house did, so one found in a chain or sent by
 * anyone else must not make X trusted. A hand-over counts when it is well formed, its `new_key_id`
 * is the id of `new_public_key`, and its signature verifies by the old key; when this browser has
 * no Ed25519 in WebCrypto the signature cannot be checked here and the old key is taken on the
 * house's word (the key's `verified` is false), as a record's signature is then left to the CLI.
 *
 * Returns {current, keys: [{public_key, key_id, path: [key ids from this key to the current],
 * verified}], refused: [{public_key, key_id, reason}]}: `keys` oldest first, the current last.
 */
export async function keyLineage(current, handovers = []) {
  const currentId = await keyIdFor(hexToBytes(current));
  const trusted = new Map([[current, { public_key: current, key_id: currentId, path: [currentId], verified: true }]]);
  const refused = [];
  let pending = [];
  for (const s of Array.isArray(handovers) ? handovers : []) {
    const problem = await handoverProblem(s);
    if (problem === null) pending.push(s);
    else if (typeof s?.public_key === "string") refused.push({ public_key: s.public_key, key_id: s.key_id, reason: `a passagem de chave publicada pela casa não vale: ${problem}` });
  }
  // whatever their order: repeat until no hand-over adds a key
  for (let grew = true; grew;) {
    grew = false;
    const waiting = [];
    for (const s of pending) {
      const next = trusted.get(s.new_public_key);
      if (!next) {
        waiting.push(s);
        continue;
      }
      if (trusted.has(s.public_key)) continue;
      const verdict = await verifySignature(s);
      if (verdict === false) {
        refused.push({ public_key: s.public_key, key_id: s.key_id,
          reason: `a passagem de chave publicada pela casa, de ${s.key_id} para ${s.new_key_id}, tem uma assinatura que não confere` });
        continue;
      }
      trusted.set(s.public_key, { public_key: s.public_key, key_id: s.key_id, path: [s.key_id, ...next.path],
        verified: verdict === true && next.verified });
      grew = true;
    }
    pending = waiting;
  }
  for (const s of pending) {
    refused.push({ public_key: s.public_key, key_id: s.key_id,
      reason: `a passagem de chave publicada pela casa, de ${s.key_id} para ${s.new_key_id}, não leva à chave atual da casa` });
  }
  const keys = [...trusted.values()].sort((a, b) => b.path.length - a.path.length);
  return { current, keys, refused: refused.filter((r) => !trusted.has(r.public_key)) };
}

/** SHA-256 of the whole record's canonical bytes: what the table's next record names in `prev`. */
export async function recordHash(record) {
  return bytesToHex(await sha256(canonicalJSON(record)));
}

function contributionBytes(record) {
  return record.contributions.map((c) => (c === null ? null : hexToBytes(c)));
}

/**
 * Whether a key is one the house publishes (`published`: keyLineage's keys, or hex strings), for
 * a key the person typed: {published: true / false, or null when the house's keys are unknown
 * (/api/key unavailable), words: what it is, after "que" or alone ("" when unknown)}.
 */
function publishedKey(publicKey, published) {
  if (!Array.isArray(published)) return { published: null, words: "" };
  const entry = normalisePins(published).find((p) => p.public_key === publicKey);
  if (!entry) return { published: false, words: "também não é a chave que a casa publica" };
  return { published: true, words: entry.path && entry.path.length > 1
    ? `é uma chave anterior da casa, passada à atual, ${entry.path[entry.path.length - 1]}`
    : "é a chave que a casa publica" };
}

/** Check 2 against pinned keys: which one signed, the current one or an older one handed over.
 * `typed` ({published}): the pins are the key the person typed, not the house's published ones. */
function keyCheck(record, keyId, pins, refusedKeys, typed = null) {
  const pin = pins.find((p) => p.public_key === record.public_key);
  if (typed) {
    // the typed key is the person's, not "the house's": say whether the signer is the house's
    const { published, words } = publishedKey(record.public_key, typed.published);
    const signer = { key_id: keyId, published, words };
    if (pin) {
      // the key typed signed it: "também" (as well as the typed one) has nothing to refer to
      const said = words.replace(/^também /, "");
      return { name: "key", status: "pass", signer,
        detail: `assinado pela chave que você digitou, ${keyId}${said ? `, que ${said}` : ""}` };
    }
    return { name: "key", status: "fail", signer,
      detail: `assinado por ${keyId}, não pela chave que você digitou (${pins.map((p) => p.key_id).join(", ")})${words ? `; ${keyId} ${words}` : ""}` };
  }
  if (!pin) {
    const older = pins.some((p) => p.path && p.path.length > 1);
    const refusal = refusedKeys.find((r) => r.public_key === record.public_key);
    return { name: "key", status: "fail",
      detail: `assinado por ${keyId}, não pela chave fixada da casa${older ? " nem por uma chave anterior passada a ela" : ""}`
        + (refusal ? ` (${refusal.reason})` : "") };
  }
  if (!pin.path || pin.path.length === 1) {
    return { name: "key", status: "pass", detail: `assinado pela chave fixada da casa, ${keyId}` };
  }
  const current = pin.path[pin.path.length - 1];
  const steps = pin.path.length > 2 ? ` (passagens de chave ${pin.path.join(" → ")})` : "";
  const unverified = pin.verified ? ""
    : "; este navegador não tem Ed25519 no WebCrypto: a assinatura da passagem de chave não foi conferida aqui, e sim pela linha de comando (barajamos-verify chain, com a cadeia da mesa)";
  return { name: "key", status: "pass",
    detail: `assinado por uma chave anterior da casa, ${keyId}, passada à atual, ${current}${steps}${unverified}` };
}

/** Pinned keys as verifyHandRecord takes them (hex strings or keyLineage entries), as entries. */
function normalisePins(pinnedKeys) {
  return (pinnedKeys ?? [])
    .map((k) => (typeof k === "string" ? { public_key: k, key_id: null, path: null, verified: true } : k));
}

/**
 * The commitment this browser was shown for a hand before its deal (the live table keeps it)
 * against the record's: a record that does not keep it has a seed chosen afterwards, whatever
 * SHA-256(seed) = commitment says (any made-up seed hashes to its own commitment).
 */
export function commitmentSeenCheck(record, seen) {
  return record.commitment === seen
    ? { name: "seen", status: "pass", detail: "o compromisso do registro é o que a mesa mostrou a este navegador antes da mão" }
    : { name: "seen", status: "fail",
      detail: `a mesa mostrou a este navegador o compromisso ${seen.slice(0, 16)}… antes da mão, e o registro traz ${record.commitment.slice(0, 16)}…: a semente não é a que foi comprometida antes da mão` };
}

const ANCHOR_FIELDS = ["kind", "version", "table", "chain_start", "length", "anchor", "key_id", "public_key", "signature"];
const MAX_CHAIN_LENGTH = 2 ** 20;
// the seeds the house anchors in a chain (FAIRNESS.md 3.1): a new chain after a shorter one warns
const HOUSE_CHAIN_LENGTH = 1024;

/** What is wrong with a `seed_anchor` statement's form (null when nothing): its signature aside. */
async function anchorProblem(s) {
  const keys = Object.keys(s);
  if (keys.length !== ANCHOR_FIELDS.length || !ANCHOR_FIELDS.every((k) => keys.includes(k))) {
    return `esperava exatamente os campos ${ANCHOR_FIELDS.join(", ")}`;
  }
  if (s.version !== VERSION) return `versão desconhecida (este verificador conhece ${VERSION})`;
  if (typeof s.table !== "string") return "table: esperava um id de mesa";
  if (!isInt(s.chain_start, 1, MAX_HAND)) return "chain_start: esperava um inteiro de 1 a 2^32-1";
  if (!isInt(s.length, 1, MAX_CHAIN_LENGTH)) return "length: esperava um inteiro de 1 a 2^20";
  try {
    hexOf(s.anchor, "anchor", 32);
    const key = hexOf(s.public_key, "public_key", 32);
    hexOf(s.key_id, "key_id", 8);
    hexOf(s.signature, "signature", 64);
    if (await keyIdFor(key) !== s.key_id) return `key_id ${s.key_id} não é o id de public_key (${await keyIdFor(key)})`;
  } catch (err) {
    if (err instanceof UnreadableError) return err.message;
    throw err;
  }
  return null;
}

/**
 * The `seed-chain` check of one record against the signed seed anchors of its table (FAIRNESS.md
 * 3, 8 and 9, check 11, as `barajamos-verify chain` does for a record without the hand before
 * it): the record's seed, hashed `hand - chain_start + 1` times with SHA-256, must give the anchor
 * `s_0` of its chain (`chain_start` the record's), which the house signed before that chain's
 * first hand took any entropy. So the seed was fixed before the players spoke, which
 * SHA-256(seed) = commitment alone does not show.
 *
 * `entries`: the table's chain as the house serves it (`GET /tables/{id}/chain`); only its
 * `seed_anchor` statements of the record's table are used. `pinnedKeys` as verifyHandRecord's:
 * an anchor must be signed by one of them (none pinned: a warning). Returns {name: "seed-chain",
 * status, detail, cause}: `pass`, `fail`, or `warn` (no signed anchor for this chain, no pinned
 * key, or a chain anchored while the previous one still covered its first hand: a lost seed
 * chain and a choice look the same from outside); `cause` is "key" on a failure whose only fault
 * is the anchor's signer (the seed reaches an anchor validly signed by a key that is not pinned).
 */
export async function seedChainCheck(record, entries, pinnedKeys, { typed = null } = {}) {
  const pins = normalisePins(pinnedKeys);
  // a key typed by the person is theirs: an anchor by another key is "not the key you typed"
  // (and said whether it is the house's), never "a key the house does not publish"
  const notPinned = (id, publicKey) => {
    if (!typed) return `${id}, uma chave que a casa não publica`;
    const { words } = publishedKey(publicKey, typed.published);
    return `${id}, não pela chave que você digitou${words ? ` (${id} ${words})` : ""}`;
  };
  const start = record.chain_start;
  const trusted = []; // {statement, checked}: signed by a pinned key (or, none pinned, by its own)
  const foreign = []; // validly signed, by a key that is not pinned
  const refused = []; // {chain_start, reason}: unreadable, or a signature that does not verify
  const list = Array.isArray(entries) ? entries : [];
  for (const [position, s] of list.entries()) {
    if (s === null || typeof s !== "object" || Array.isArray(s) || s.kind !== "seed_anchor") continue;
    // as the CLI: a seed anchor the chain holds that is not a valid statement (of any table)
    // leaves this check not made, a warning, whatever the others say
    const problem = await anchorProblem(s);
    if (problem !== null) {
      return { name: "seed-chain", status: "warn",
        detail: `a entrada ${position} da cadeia da mesa não é uma declaração válida (${clip(problem)}): a semente não foi conferida com a cadeia` };
    }
    if (s.table !== record.table) continue;
    const name = `a âncora da cadeia a partir da mão ${s.chain_start}`;
    const verdict = await verifySignature(s);
    if (verdict === false) {
      refused.push({ chain_start: s.chain_start, reason: `${name} tem uma assinatura que não confere` });
    } else if (pins.length > 0 && !pins.some((p) => p.public_key === s.public_key)) {
      foreign.push({ statement: s, checked: verdict === true });
    } else {
      trusted.push({ statement: s, checked: verdict === true });
    }
  }
  const same = trusted.filter((t) => t.statement.chain_start === start);
  // an anchor of this chain that does not count fails the record only when none counts (a bad
  // copy beside the good one says nothing against the seed)
  const bad = refused.find((r) => r.chain_start === start);
  if (bad && same.length === 0) return { name: "seed-chain", status: "fail", detail: `${bad.reason}: ela não prova nada sobre a semente desta mão` };
  const index = record.hand - start + 1;
  const times = `${index} ${index === 1 ? "vez" : "vezes"}`;
  /** Whether the seed hashed `index` times is that anchor (false past its length: no hashing). */
  const reaches = async (anchor) => {
    if (index > anchor.length) return false;
    let value = hexToBytes(record.seed);
    for (let i = 0; i < index; i += 1) value = await sha256(value);
    return bytesToHex(value) === anchor.anchor;
  };
  if (same.length === 0) {
    const other = foreign.find((t) => t.statement.chain_start === start)?.statement;
    if (other) {
      // signed, but not by a key of the house's: what failed is the key (a rotation whose
      // hand-over was not published, or a chain that is not the house's), said so apart
      const signer = typed ? { key_id: other.key_id, ...publishedKey(other.public_key, typed.published) } : undefined;
      return await reaches(other)
        ? { name: "seed-chain", status: "fail", cause: "key", signer,
          detail: `a semente chega à âncora da cadeia a partir da mão ${start}, mas essa âncora foi assinada por ${notPinned(other.key_id, other.public_key)}` }
        : { name: "seed-chain", status: "fail", signer,
          detail: `a semente não chega à âncora da cadeia a partir da mão ${start}, que além disso foi assinada por ${notPinned(other.key_id, other.public_key)}` };
    }
    return { name: "seed-chain", status: "warn",
      detail: `a casa não publica a âncora assinada da cadeia de sementes desta mão (a partir da mão ${start}): não dá para saber se a semente foi fixada antes da mão` };
  }
  const [anchor] = same;
  if (same.some((t) => t.statement.anchor !== anchor.statement.anchor || t.statement.length !== anchor.statement.length)) {
    return { name: "seed-chain", status: "fail",
      detail: `a casa assinou âncoras diferentes para a mesma cadeia de sementes (a partir da mão ${start})` };
  }
  if (index > anchor.statement.length) {
    // checked before any hashing
    return { name: "seed-chain", status: "fail",
      detail: `a mão ${record.hand} seria a semente ${index} da cadeia a partir da mão ${start}, que tem só ${anchor.statement.length}` };
  }
  if (!await reaches(anchor.statement)) {
    return { name: "seed-chain", status: "fail",
      detail: `a semente, com SHA-256 aplicado ${times}, não chega à âncora que a casa assinou antes da mão ${start}: esta semente não é da cadeia fixada antes das mãos, e pode ter sido escolhida depois` };
  }
  const passed = `a semente, com SHA-256 aplicado ${times}, chega à âncora assinada da cadeia de sementes a partir da mão ${start}: a semente foi fixada antes da mão`;
  if (pins.length === 0) {
    return { name: "seed-chain", status: "warn",
      detail: `${passed}; mas sem a chave da casa não se sabe quem assinou a âncora (${anchor.statement.key_id})` };
  }
  // FAIRNESS.md 3.5: a new chain while the previous one still covered its first hand, or right
  // after a previous one shorter than the house's (each new chain's seeds were drawn later)
  const earlier = trusted.map((t) => t.statement).filter((a) => a.chain_start < start);
  const begin = Math.max(...earlier.map((a) => a.chain_start));
  const previous = earlier.filter((a) => a.chain_start === begin)
    .reduce((longest, a) => (longest === null || a.length > longest.length ? a : longest), null);
  if (previous && begin + previous.length === start && previous.length < HOUSE_CHAIN_LENGTH) {
    const seeds = `${previous.length} ${previous.length === 1 ? "semente" : "sementes"}`;
    return { name: "seed-chain", status: "warn",
      detail: `${passed}; mas essa cadeia foi ancorada na mão ${start} logo depois de uma de só ${seeds} (a partir da mão ${begin}): a casa ancora ${HOUSE_CHAIN_LENGTH} sementes por cadeia, e as sementes de cada cadeia nova foram escolhidas depois` };
  }
  const covering = previous && begin + previous.length - 1 >= start ? previous : null;
  if (covering) {
    return { name: "seed-chain", status: "warn",
      detail: `${passed}; mas essa cadeia foi ancorada na mão ${start} enquanto a anterior (da mão ${begin}, ${covering.length} sementes) ainda cobria essa mão: de fora, uma cadeia perdida pela casa e uma escolha parecem iguais` };
  }
  const unchecked = anchor.checked ? ""
    : " (este navegador não tem Ed25519 no WebCrypto: a assinatura da âncora não foi conferida aqui; confira na linha de comando)";
  return { name: "seed-chain", status: "pass", detail: passed + unchecked };
}

/**
 * Checks 1-7 and 9 of FAIRNESS.md 9 on one record; `replay` is the engine's job (the CLI).
 *
 * `record` is the text of the file (parsed strictly here) or an already parsed object.
 * Options: `pinnedKeys` (the trusted keys: hex strings, or the entries of keyLineage's `keys`,
 * which say how an older key was handed over to the current one; `pinnedKey`, one hex key, is
 * the same as a list of one), `refusedKeys` (keyLineage's `refused`: named when a record is
 * signed by one of them), `mine` (my contribution, hex), `expected` ({table, hand}: the hand
 * that was asked for, e.g. by the URL `/hands/{table}-{hand}`; the record must be that hand, the
 * `source` check, as the CLI's), `seenCommitment` (hex: the commitment this browser was shown
 * for that hand before its deal; the record must carry it, the `seen` check), `typed`
 * ({published}: the pinned key is one the person typed, not the house's; `published` is the
 * house's keys, keyLineage's, or null when unknown: the `key` check then says "the key you
 * typed", and whether the signer is the house's published key, in its detail and `signer`).
 * Returns {readable, error, checks: [{name, status: pass|fail|warn|skip, detail}], record, deck,
 * deal}; `readable` is false (and `error` says why) when the input is not a record at all.
 */
export async function verifyHandRecord(input, {
  pinnedKey = null, pinnedKeys = null, refusedKeys = [], mine = null, expected = null, seenCommitment = null,
  typed = null,
} = {}) {
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
  const checks = [{ name: "structure", status: "pass", detail: `todos os campos presentes e bem formados, versão ${VERSION}` }];
  const add = (name, ok, passDetail, failDetail) =>
    checks.push({ name, status: ok ? "pass" : "fail", detail: ok ? passDetail : failDetail });

  // the hand asked for: a genuine record of another hand proves nothing about this one
  if (expected !== null) {
    const hand = Number(expected.hand);
    add("source", record.table === expected.table && record.hand === hand,
      `o registro é a mão ${hand} da mesa ${expected.table}, a pedida`,
      `pedida a mão ${hand} da mesa ${expected.table}, o registro é a mão ${record.hand} da mesa ${record.table}`);
  }

  // 2. key
  const pins = normalisePins(pinnedKeys ?? (pinnedKey === null ? [] : [pinnedKey]));
  const publicKey = hexToBytes(record.public_key);
  const keyId = await keyIdFor(publicKey);
  if (keyId !== record.key_id) {
    add("key", false, "", `key_id ${record.key_id} não é o id da chave pública (${keyId})`);
  } else if (pins.length === 0) {
    checks.push({ name: "key", status: "warn", detail: `chave não fixada: usando a chave do próprio registro, ${keyId}` });
  } else {
    // a typed key is named by its id
    const named = typed
      ? await Promise.all(pins.map(async (p) => ({ ...p, key_id: p.key_id ?? await keyIdFor(hexToBytes(p.public_key)) })))
      : pins;
    checks.push(keyCheck(record, keyId, named, refusedKeys ?? [], typed));
  }

  // 3. signature
  const verdict = await ed25519Verify(publicKey, hexToBytes(record.signature), signedBytes(record));
  if (verdict === null) {
    checks.push({ name: "signature", status: "skip",
      detail: "este navegador não tem Ed25519 no WebCrypto: a assinatura é conferida pela linha de comando" });
  } else {
    add("signature", verdict, "a assinatura Ed25519 confere com o registro",
      "a assinatura Ed25519 não confere: o registro foi alterado depois de assinado");
  }

  // 4. commitment
  const seed = hexToBytes(record.seed);
  const committed = bytesToHex(await sha256(seed));
  add("commitment", committed === record.commitment, "SHA-256(semente) é igual ao compromisso",
    `SHA-256(semente) dá ${committed}, o compromisso diz ${record.commitment}`);

  // the commitment this browser was shown before the hand (the live table keeps it): the record
  // must keep it, else the seed was chosen after the players' entropy
  if (seenCommitment !== null) checks.push(commitmentSeenCheck(record, seenCommitment));

  // 5. deck
  const contributions = contributionBytes(record);
  const trace = await shuffleTrace(seed, record.table, record.hand, contributions);
  const deckDiff = trace.deck.findIndex((card, i) => card !== record.deck[i]);
  add("deck", deckDiff === -1, `o baralho refeito da semente e das contribuições confere (${trace.bytesRead} bytes lidos do fluxo, ${trace.rejected.length} ${trace.rejected.length === 1 ? "rejeitado" : "rejeitados"})`,
    `o baralho refeito difere na posição ${deckDiff + 1}: ${trace.deck[deckDiff]} refeito, ${record.deck[deckDiff]} no registro`);

  // 6. dealer
  if (record.dealer.by === "draw") {
    const drawn = await drawFirstDealer(seed, record.table, contributions);
    add("dealer", drawn === record.dealer.seat, `o sorteio de quem dá resulta no lugar ${drawn + 1}`,
      `o sorteio de quem dá resulta no lugar ${drawn + 1}, o registro diz ${record.dealer.seat + 1}`);
  } else if (record.hand === 1) {
    // FAIRNESS.md 9, check 6: hand 1 of a table starts a match, so its dealer is always drawn
    add("dealer", false, "", "a mão 1 de uma mesa começa uma partida: quem dá precisa ser sorteado, não por rodízio");
  } else {
    // the previous hand's dealer is not in this record: the chain verification checks it
    checks.push({ name: "dealer", status: "skip",
      detail: "quem dá por rodízio: conferido contra a mão anterior pela verificação da cadeia (barajamos-verify chain)" });
  }

  // 7. deal
  const deal = dealCards(trace.deck, record.variant, record.seats, record.dealer.seat);
  const sameCards = (a, b) => a.length === b.length && a.every((card, i) => card === b[i]);
  const dealOk = deal.vira === record.deal.vira
    && deal.hands.every((cards, seat) => sameCards(cards, record.deal.hands[seat]));
  add("deal", dealOk, "distribuir o baralho refeito dá exatamente as mãos" + (deal.vira ? " e a vira" : "") + " do registro",
    "as mãos ou a vira do registro não são o que o baralho refeito distribui");

  // 8. replay: rules replay needs the engine
  checks.push({ name: "replay", status: "skip", detail: "o replay das jogadas pelas regras roda na linha de comando (barajamos-verify hand)" });

  // 9. mine
  if (mine !== null) {
    const seat = record.contributions.indexOf(mine.toLowerCase()); // hex typed in either case
    add("mine", seat !== -1, `a minha contribuição está no registro, no lugar ${seat + 1}`,
      "a minha contribuição não está no registro");
  }
  return { readable: true, error: null, checks, record, deck: trace.deck, deal, rejected: trace.rejected };
}
