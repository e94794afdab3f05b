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
  table_not_found: "Mesa não encontrada (ou é privada e você não tem o convite).",
  wrong_invite: "Código de convite errado.",
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
  no_hand: "Nenhuma mão em jogo agora.",
  wrong_seat: "Esse não é o seu lugar.",
  entropy_closed: "A entropia desta mão não está mais sendo recebida.",
  bad_entropy: "Entropia inválida (1 a 256 bytes).",
  bad_signal: "Sinal desconhecido.",
  no_partner: "Sinais só em mesas 2x2.",
  too_large: "Mensagem grande demais.",
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

export function cardLabel(card, variant) {
  if (!card) return "carta virada";
  const es = variant === "argentino";
  const [rank, suit] = [card[0], card[1]];
  const rankName = (es ? RANK_NAME_ES : RANK_NAME_PT)[rank] ?? rank;
  return `${rankName} de ${(es ? SUIT_NAME_ES : SUIT_NAME_PT)[suit]}`;
}

/** A card face (or back, when `card` is null) with a readable name for screen readers. */
export function cardFace(card, variant, extra = {}) {
  if (!card) {
    return el("span", { class: "card back", role: "img", "aria-label": extra.label ?? "carta virada" }, "🂠");
  }
  const red = card[1] === "H" || card[1] === "D";
  return el("span", { class: `card${red ? " red" : ""}`, role: "img", "aria-label": cardLabel(card, variant),
    dataset: { card } }, card[0], el("span", { class: "suit", "aria-hidden": "true" }, SUIT_SYMBOL[card[1]]));
}

export const VARIANT_NAME = { paulista: "Paulista", mineiro: "Mineiro", argentino: "Argentino" };
export const KIND_NAME = { private: "privada", training: "treino", ranked: "ranqueada", arena: "arena" };
export const STATUS_NAME = { open: "aguardando jogadores", playing: "em jogo", finished: "partida encerrada", closed: "fechada" };

// --- my entropy, kept in this browser (docs/FAIRNESS.md 4) -------------------------------------

const MINE_PREFIX = "barajamos:mine:";
const HISTORY_KEY = "barajamos:hands";

export function rememberContribution(table, hand, hex) {
  try {
    localStorage.setItem(`${MINE_PREFIX}${table}-${hand}`, hex);
  } catch {
    // storage full or disabled: the hand still plays, only the "mine" check is lost
  }
}

export function myContribution(table, hand) {
  try {
    return localStorage.getItem(`${MINE_PREFIX}${table}-${hand}`);
  } catch {
    return null;
  }
}

/** Hands this browser played, newest first: {table, hand, variant, at}. */
export function playedHands() {
  try {
    const list = JSON.parse(localStorage.getItem(HISTORY_KEY) ?? "[]");
    return Array.isArray(list) ? list : [];
  } catch {
    return [];
  }
}

export function rememberPlayedHand(entry) {
  const list = playedHands().filter((h) => !(h.table === entry.table && h.hand === entry.hand));
  list.unshift(entry);
  try {
    localStorage.setItem(HISTORY_KEY, JSON.stringify(list.slice(0, 500)));
  } catch {
    // see rememberContribution
  }
}
