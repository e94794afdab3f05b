// Shared helpers of the browser pages: the JSON API with CSRF, cards and words in pt-BR.

export const csrf = document.querySelector('meta[name="csrf-token"]')?.content ?? "";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// What a refused lobby request means to a player (docs/PROTOCOL.md, Refusals).
const API_ERRORS = {
  bad_variant: "Variante desconhecida.",
  bad_seats: "Escolha 2 ou 4 jogadores.",
  bad_mode: "Modo de decisão desconhecido.",
  bad_kind: "Esse tipo de mesa não pode ser criado aqui.",
  bad_seat: "Esse lugar não existe nesta mesa.",
  private_table: "Esta mesa é privada: abra-a pelo link de convite que quem a criou enviou.",
  table_not_found: "Mesa não encontrada: foi fechada (todos saíram, ou ficou muito tempo sem ninguém) ou é privada e você não tem o convite.",
  wrong_invite: "Código de convite errado.",
  match_in_play: "Uma nova partida começou nesta mesa enquanto você saía: sair agora é desistir dela. Para isso, use “Desistir e sair da mesa”.",
  too_many_guesses: "Códigos de convite errados demais nos últimos 10 minutos: peça o link de convite a quem criou a mesa e tente de novo mais tarde.",
  seat_taken: "Esse lugar já está ocupado.",
  already_seated: "Você já está sentado nesta mesa.",
  not_seated: "Você não está sentado nesta mesa.",
  table_full: "A mesa está cheia.",
  not_open: "A mesa não está mais recebendo jogadores.",
  not_full: "Uma mesa privada só começa com todos os lugares ocupados.",
  not_finished: "A partida ainda não terminou.",
  table_closed: "A mesa foi fechada.",
  rematch_not_allowed: "Mesas ranqueadas e de arena jogam uma partida só: entre na fila de novo.",
  matchmaker_table: "Os lugares das mesas ranqueadas e de arena são dados pela fila.",
  bad_characters: "O texto enviado tem um caractere que não é aceito; nada foi alterado.",
  too_many_accounts: "Muitas contas criadas a partir deste endereço: tente de novo daqui a uma hora.",
  too_many_tables: "Você já está em mesas demais esperando jogadores: comece ou saia de uma delas antes de criar outra.",
  too_many_connections: "Conexões demais com esta mesa em pouco tempo: a página tenta de novo em alguns segundos.",
  too_many_sockets: "Você já tem conexões demais abertas com mesas (32 abas ou janelas): feche algumas e esta mesa volta sozinha.",
  too_many_matches: "Você já está jogando em mesas demais: termine ou saia de uma delas antes de criar outra.",
  login_required: "Entre na sua conta primeiro.",
  csrf_failed: "Sessão expirada: recarregue a página.",
  rate_limited: "Calma: muitas mensagens seguidas.",
  // the engine's refusals and the table protocol's (docs/ENGINE.md, docs/PROTOCOL.md)
  not_your_turn: "Não é a sua vez.",
  card_not_in_hand: "Essa carta não está na sua mão.",
  raise_not_allowed: "Não dá para aumentar agora.",
  nothing_to_answer: "Não há pedido para responder.",
  answer_pending: "Há um pedido esperando resposta.",
  envido_not_allowed: "Não dá para cantar envido agora.",
  cover_not_allowed: "Não dá para cobrir carta agora.",
  fold_not_allowed: "Só dá para ir al mazo na sua vez.",
  hand_not_in_progress: "Nenhuma mão em jogo agora.",
  match_over: "A partida já terminou.",
  already_voted: "Você já votou isso.",
  folded: "Você foi al mazo nesta mão.",
  hand_in_progress: "Há uma mão em jogo: espere ela terminar.",
  unknown_seat: "Esse lugar não existe nesta mesa.",
  wrong_variant: "Essa jogada não existe nesta variante.",
  timeout_not_pending: "Não há decisão esperando o relógio agora.",
  position_required: "Na mão de ferro, escolha a posição da carta (as cartas estão viradas).",
  no_hand: "Nenhuma mão em jogo agora.",
  wrong_seat: "Esse não é o seu lugar.",
  entropy_closed: "A entropia desta mão não está mais sendo recebida.",
  bad_entropy: "Entropia inválida (1 a 256 bytes).",
  bad_signal: "Sinal desconhecido.",
  no_partner: "Sinais só em mesas 2x2.",
  too_many_signals: "Sinais demais nesta mão: até 16 por mão.",
  too_large: "Mensagem grande demais.",
  // the table socket's own refusals (docs/PROTOCOL.md, Server direct replies)
  in_doubt: "Não foi possível confirmar a jogada; a mesa foi recarregada: confira se ela valeu.",
  unavailable: "O servidor não conseguiu gravar agora: nada mudou, tente de novo.",
  shutting_down: "O servidor está reiniciando: nada mudou, a mesa volta em instantes.",
  action_limit: "Esta mão chegou ao limite de ações: agora só o relógio joga.",
  bad_action: "Essa jogada não existe: nada foi feito.",
  bad_message: "O servidor não entendeu a mensagem: recarregue a página.",
  bad_json: "O servidor não entendeu a mensagem: recarregue a página.",
  hello_first: "A conexão ainda está começando: tente de novo em instantes.",
  internal_error: "Erro interno do servidor (já registrado). Tente de novo.",
  bad_form: "O formulário enviado está incompleto ou inválido: recarregue a página.",
  bad_cursor: "Essa página da lista não existe.",
};

export function apiMessage(code, fallback) {
  return API_ERRORS[code] ?? fallback ?? "Algo deu errado. Tente de novo.";
}

export async function api(method, path, body) {
  const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (method !== "GET") {
    init.headers["X-CSRF-Token"] = csrf;
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body ?? {});
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, "network", "Sem conexão com o servidor.");
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const code = data?.error ?? "http_" + response.status;
    throw new ApiError(response.status, code, apiMessage(code, data?.message));
  }
  return data;
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// --- cards --------------------------------------------------------------------------------------

const SUIT_SYMBOL = { C: "♣", H: "♥", S: "♠", D: "♦" };
const SUIT_NAME_PT = { C: "paus", H: "copas", S: "espadas", D: "ouros" };
const SUIT_NAME_ES = { C: "bastos", H: "copas", S: "espadas", D: "oros" };
const RANK_NAME_PT = { Q: "valete", J: "cavalo", K: "rei", A: "ás" };
const RANK_NAME_ES = { Q: "sota", J: "caballo", K: "rey", A: "as" };
// What the corner of a card prints. The engine's letters Q / J / K are the valete (sota), the
// cavalo (caballo) and the rei (rey); a Brazilian reads a printed "J" as valete, so the corners
// use the numbers the Spanish-suited decks (and many Brazilian ones) print: 10, 11, 12.
const RANK_CORNER = { Q: "10", J: "11", K: "12" };

/** The rank as printed in a card's corner ("10" for the valete / sota, "7" for a seven). */
export function cardCorner(card) {
  return RANK_CORNER[card[0]] ?? card[0];
}

export function cardLabel(card, variant) {
  if (!card) return "carta virada";
  const es = variant === "argentino";
  const [rank, suit] = [card[0], card[1]];
  const rankName = (es ? RANK_NAME_ES : RANK_NAME_PT)[rank] ?? rank;
  return `${rankName} de ${(es ? SUIT_NAME_ES : SUIT_NAME_PT)[suit]}`;
}

/**
 * A card's name led by what its corner prints, for a control that plays it: "11 de espadas
 * (cavalo)", "4 de paus". A voice-control user says what they see ("clicar 11"): a control's
 * name must hold its visible text (WCAG 2.5.3, Label in Name).
 */
export function cardName(card, variant) {
  const label = cardLabel(card, variant);
  const corner = cardCorner(card);
  if (label.startsWith(`${corner} `)) return label;
  const [rankName, ...suit] = label.split(" de ");
  return `${corner} de ${suit.join(" de ")} (${rankName})`;
}

/** A card face (or back, when `card` is null) with a readable name for screen readers. */
export function cardFace(card, variant, extra = {}) {
  if (!card) {
    return el("span", { class: "card back", role: "img", "aria-label": extra.label ?? "carta virada" }, "🂠");
  }
  const red = card[1] === "H" || card[1] === "D";
  return el("span", { class: `card${red ? " red" : ""}`, role: "img", "aria-label": cardLabel(card, variant),
    dataset: { card } }, cardCorner(card), el("span", { class: "suit", "aria-hidden": "true" }, SUIT_SYMBOL[card[1]]));
}

/**
 * A seat's player as the pages name it. The server's bots are all called "bot", so they are told
 * apart by their seat: "Robô 2" (player names cannot hold a space, so no person is named so).
 */
export function playerName(player) {
  if (!player) return "?";
  if (player.bot) return `Robô ${player.seat + 1}`;
  return player.name ?? `Lugar ${player.seat + 1}`;
}

// a no-break space: a score's number and its unit never part at a line's end, on a phone's
// scoreboard ("(0 / malas)") or in a score in words
const NBSP = "\u00a0";

export function malasBuenas(points) {
  // Argentino's 30 are counted as 15 malas, then 15 buenas (display only): 30 is the 15th buena,
  // the match's end; an envido may carry the score past it, never to a 16th buena
  if (points <= 15) return `${points}${NBSP}${points === 1 ? "mala" : "malas"}`;
  return `${Math.min(points, 30) - 15}${NBSP}${points - 15 === 1 ? "buena" : "buenas"}`;
}

/** Argentino's score in words as its scoreboard says it: the points, and beside them the malas
 * or buenas ("18 (3 buenas)", "31 (15 buenas)"). Both sides in the same units: "3 buenas x 31
 * pontos" read as if one side had 3 points. */
export function argentinoPoints(points) {
  return `${points}${NBSP}(${malasBuenas(points)})`;
}

/** A side's score as the table page says it: Argentino's with malas and buenas, others a number. */
export function scorePoints(points, variant) {
  return variant === "argentino" ? argentinoPoints(points) : String(points);
}

/** A team's seats, counted from 1 as the pages count them: "lugar 2"; 2x2 "lugares 1 e 3"
 * (dupla A: seats 1 and 3, as the lobby's `Sentar no lugar 3 (dupla A)`). */
export function teamSeats(team, seats) {
  const numbers = Array.from({ length: seats }, (_, s) => s + 1).filter((n) => (n - 1) % 2 === team);
  return numbers.length === 1 ? `lugar ${numbers[0]}` : `lugares ${numbers.join(" e ")}`;
}

export const VARIANT_NAME = { paulista: "Paulista", mineiro: "Mineiro", argentino: "Argentino" };
export const KIND_NAME = { private: "privada", training: "treino", ranked: "ranqueada", arena: "arena" };
export const STATUS_NAME = { open: "aguardando jogadores", playing: "em jogo", finished: "partida encerrada", closed: "fechada" };

// --- my entropy, kept in this browser (docs/FAIRNESS.md 4) -------------------------------------

// What this browser keeps is kept per account, under `barajamos:u<user id>:<name>`: on a shared
// computer the next player to sign in sees none of it (their /me/hands listed the tables of the
// one before). Signed out, nothing is kept or read. (Keys of an older version, without the
// account, are deleted.)
// keys of an older version, kept for no account: the last player's on a shared browser, gone
try {
  for (const key of Object.keys(localStorage)) {
    if (/^barajamos:(hands$|mine:|mine-state:|commitment:)/.test(key)) localStorage.removeItem(key);
  }
} catch {
  // storage disabled: nothing kept either
}

function stored(name) {
  const id = document.getElementById("me")?.dataset.userId;
  return id ? `barajamos:u${id}:${name}` : null;
}

function storageGet(name) {
  const key = stored(name);
  if (key === null) return null;
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

function storageSet(name, value) {
  const key = stored(name);
  if (key === null) return;
  try {
    localStorage.setItem(key, value);
  } catch {
    // storage full or disabled: the hand still plays, only the checks it serves are lost
  }
}

export function rememberContribution(table, hand, hex) {
  storageSet(`mine:${table}-${hand}`, hex);
}

export function myContribution(table, hand) {
  return storageGet(`mine:${table}-${hand}`);
}

/** The hand whose contribution of mine at `table` the storage key `key` holds, else null. */
export function contributionHandOf(key, table) {
  const prefix = stored(`mine:${table}-`);
  return prefix !== null && key?.startsWith(prefix) ? Number(key.slice(prefix.length)) : null;
}

// What became of my contribution: "sent" (no answer yet), "received" (acked, or its `entropy`
// event seen) or "late" (the hand was dealt without it: it never reached the table in time).
export function contributionState(table, hand) {
  return storageGet(`mine-state:${table}-${hand}`);
}

export function setContributionState(table, hand, value) {
  storageSet(`mine-state:${table}-${hand}`, value);
}

// The commitment the table showed this browser for a hand before its deal (docs/FAIRNESS.md 3):
// the hand's record must keep it (fairness.js commitmentSeenCheck), on the table and on the hand
// page. Kept apart from the played hands' list so that a reload in the middle of the hand still
// knows it; an in-memory copy stands in when storage is disabled.
const seenHere = new Map();

export function rememberSeenCommitment(table, hand, hex) {
  seenHere.set(`${table}-${hand}`, hex);
  storageSet(`commitment:${table}-${hand}`, hex);
}

/** The commitment seen for that hand (hex), or null when this browser never saw it before the deal. */
export function seenCommitment(table, hand) {
  return storageGet(`commitment:${table}-${hand}`) ?? seenHere.get(`${table}-${hand}`) ?? null;
}

/**
 * The checks of `result` (fairness.js verifyHandRecord), with one told apart: my contribution is
 * missing from the record because it never reached the table in time (`state` "late": the server
 * answered `entropy_closed`, or dealt the hand without it, and never confirmed it), and the record
 * shows my seat absent (`null`). That is a `warn`, not a failure. Anything else stays as checked:
 * a contribution the server confirmed, or another one in my seat, still fails `mine`.
 */
export function explainLateContribution(result, state, seat) {
  if (!result.readable || state !== "late") return result.checks;
  // my seat, when this browser kept it (the played-hands list): its place must be empty; when it
  // did not (I left before the record came out), some seat's must be
  const empty = result.record.contributions.flatMap((c, i) => (c === null ? [i] : []));
  if (Number.isInteger(seat) ? !empty.includes(seat) : empty.length === 0) return result.checks;
  const where = Number.isInteger(seat) ? `o lugar ${seat + 1} aparece sem contribuição`
    : `o registro tem ${empty.length === 1 ? "um lugar" : "lugares"} sem contribuição`;
  return result.checks.map((c) => (c.name === "mine" && c.status === "fail"
    ? { name: "mine", status: "warn", detail: `a sua entropia não chegou a tempo: a mão foi distribuída sem ela (${where})` }
    : c));
}

/**
 * The house's keys from /api/key: its current public key and the older keys that handed over to
 * it (the `key_handover` statements of `handovers`, checked by fairness.js keyLineage), or null
 * when the key cannot be fetched. {current, keys: [{public_key, key_id, path, verified}] oldest
 * first, refused}. A server without key rotation sends no `handovers`: the current key alone.
 * Hand-overs are taken from /api/key only, never from a chain or a record (see keyLineage).
 */
export async function fetchHouseKeys() {
  let body;
  try {
    const response = await fetch("/api/key", { headers: { Accept: "application/json" } });
    if (!response.ok) return null;
    body = await response.json();
  } catch {
    return null;
  }
  if (typeof body?.public_key !== "string" || !/^[0-9a-f]{64}$/.test(body.public_key)) return null;
  const { keyLineage } = await import("./fairness.js");
  return keyLineage(body.public_key, Array.isArray(body.handovers) ? body.handovers : []);
}

/** The `--key` options pinning every key of the house (fetchHouseKeys), oldest first. */
export function houseKeyOptions(houseKeys) {
  return houseKeys.keys.map((k) => `--key ${k.public_key}`).join(" ");
}

/** A list kept as JSON in `text`; [] when there is none (or it is no list). */
function listOf(text) {
  try {
    const list = JSON.parse(text ?? "[]");
    return Array.isArray(list) ? list : [];
  } catch {
    return [];
  }
}

/** Hands this browser played, newest first: {table, hand, variant, at}. */
export function playedHands() {
  return listOf(storageGet("hands"));
}

/** The entry of one hand this browser played (its seat, bots, commitment), or undefined. */
export function playedHand(table, hand) {
  return playedHands().find((h) => h.table === table && String(h.hand) === String(hand));
}

/** A 2x2 team's letter, as the lobby names it: team 0 is dupla A (seats 1 and 3). */
export function teamLetter(team) {
  return team === 0 ? "A" : "B";
}

export function rememberPlayedHand(entry) {
  const list = playedHands().filter((h) => !(h.table === entry.table && h.hand === entry.hand));
  list.unshift(entry);
  storageSet("hands", JSON.stringify(list.slice(0, 500)));
}

// --- the tables this tab opened (sessionStorage) ----------------------------------------------
// The ranked and arena pages open a table formed for the player by themselves, unless the player
// has already been at it (back from the table, they are not sent there again): a table formed
// while the player was elsewhere (reading the end of the last arena table, say) runs its clock.
const OPENED_KEY = "barajamos.tables.opened";

function openedTables() {
  try {
    return listOf(sessionStorage.getItem(OPENED_KEY));
  } catch {
    return [];
  }
}

export function rememberOpenedTable(table) {
  const list = openedTables().filter((t) => t !== table);
  list.unshift(table);
  try {
    sessionStorage.setItem(OPENED_KEY, JSON.stringify(list.slice(0, 50)));
  } catch {
    // storage refused: the pages only link the table, as without script
  }
}

export function openedTable(table) {
  return openedTables().includes(table);
}

// the found match is announced (polite live region) before the page goes to the table, so a
// screen reader has said it first; the table's first deal waits for its players anyway
const FOUND = "(Partida encontrada) ";
const ANNOUNCE_MS = 1200;

/** A match was found for the player (the ranked queue, the arena, the next arena table): say so
 * in the tab's title and in the polite live region `statusNode`, then go to the table (where the
 * focus starts at the game). */
export function openTable(table, statusNode, text) {
  if (!document.title.startsWith(FOUND)) document.title = FOUND + document.title;
  if (statusNode) {
    statusNode.replaceChildren(`Partida encontrada. ${text} Abrindo a mesa… `, el("a", { class: "button", href: `/t/${table}` }, "Ir para a mesa"));
    statusNode.hidden = false;
  }
  setTimeout(() => window.location.assign(`/t/${table}`), statusNode ? ANNOUNCE_MS : 0);
}
