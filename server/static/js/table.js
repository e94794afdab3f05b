// The table: one WebSocket (docs/PROTOCOL.md), rendering the engine's view for my seat.
//
// The client never decides what is legal: every button comes from `view.legal`, and what it
// sends is that entry, unchanged. It keeps the last table event number (`seq`) and, after a
// dropped connection, reconnects by itself and says `hello` with it to catch up.

import {
  api, apiMessage, cardFace, cardLabel, cardName, contributionHandOf, contributionState, el, explainLateContribution,
  fetchHouseKeys, KIND_NAME, malasBuenas, myContribution, openTable, playerName, rememberContribution, rememberOpenedTable, rememberPlayedHand,
  scorePoints,
  rememberSeenCommitment, seenCommitment,
  setContributionState, VARIANT_NAME,
} from "./common.js";
import { bytesToHex, VERSION, verifyHandRecord, verifySignature } from "./fairness.js";
import { RULES as LADDERS } from "./moves.js";

const root = document.getElementById("table-root");
const tableId = root.dataset.tableId;
const invite = new URLSearchParams(window.location.search).get("invite");
const $ = (id) => document.getElementById(id);

const ENVIDO_NAMES = { envido: "Envido", real_envido: "Real envido", falta_envido: "Falta envido" };
// the letters of an envido chain as the view and the events give it (truco/envido.py chain_name)
const ENVIDO_LETTERS = { E: "envido", R: "real envido", F: "falta envido" };
const VOTE_NAMES = {
  accept: "aceitar", decline: "correr", raise: "aumentar", envido: "envido",
  real_envido: "real envido", falta_envido: "falta envido",
};
// Argentino answers with its own words (quiero / no quiero)
const VOTE_NAMES_AR = { ...VOTE_NAMES, accept: "quiero", decline: "no quiero" };
const TERMINATIONS = {
  abandonment: "abandono (ações automáticas demais ou saída no meio da partida)",
  cancelled: "partida cancelada: ninguém ganha",
  closed: "a mesa foi fechada",
};
const RECONNECT_MAX_MS = 5000;
// a click while the socket is down is not queued: it is said so, and the player clicks again
const OFFLINE = "Sem conexão; tente de novo.";
// an entropy message the server could not take now (database, rate limit) is sent again, unchanged,
// while the hand still collects entropy: at most this many times, this far apart
const ENTROPY_RETRIES = 5;
const ENTROPY_RETRY_MS = { unavailable: 400, rate_limited: 1000, shutting_down: 1000 };
// a move chosen on a hand that ended before it arrived: refused, changing nothing
const STALE_MOVE = "A mão mudou antes da sua jogada chegar: nada foi feito, escolha de novo.";
const STALE_DECISION = "A mesa já tinha agido por você (o relógio) antes desta jogada chegar: nada foi feito, escolha de novo.";
// the engine events of a seat's own decision: one not marked `automatic` is the player acting
// themselves, which ends their streak of automatic actions (RULES.md, Clocks)
const OWN_MOVES = new Set(["card_played", "vote_cast", "raise_requested", "envido_called", "folded"]);

const state = {
  socket: null,
  connected: false,
  lastSeq: 0,
  table: null,
  seat: null,
  view: null,
  viewHand: null, // the table hand number of `view`: sent with every action (a stale move is refused)
  lastBoard: null, // the hand that ended last, {number, match, hand, v}: its last round stays in sight
  epoch: null, // the server run of the latest welcome: sent with hello, so a reconnect can replay
  handInfo: null,
  pending: [],
  absent: new Set(),
  /** each seat's automatic actions in a row (`abandon_limit` of them forfeit the match) */
  automatic: [],
  signals: [],
  offsetMs: 0, // server clock minus ours
  nextId: 1,
  inFlight: null, // id of the action we wait an answer for
  inFlightAt: 0, // when it left (performance.now()): unanswered for SLOW_MS, the link is slow
  inFlightHand: null, // the hand it was chosen in
  reconnectDelay: 250,
  reconnectTimer: null,
  summaryHand: null,
  matchOver: null, // the latest match_over, with the table's match number it ended
  endLogged: null, // the match number whose end the log already tells
  records: new Map(), // hand number -> record url
  seeds: new Map(), // hand number -> revealed seed (hex), from records checked in this page
  recordChecks: new Map(), // hand number -> the promise of its record's check
  chainCheck: null, // {hand, state: ok|fail|unknown, text}: the latest commitment's check
  lastCheck: null, // {hand, state, text}: the latest finished hand verified in this page
  // a (re)connection catches up first (a replay up to the welcome's `seq`, or a snapshot); only
  // then does the client decide whether this hand still needs my entropy
  catchingUp: true,
  catchUpTo: null, // the welcome's `seq`
  entropySent: new Set(), // hands whose entropy went out on this socket, not yet answered
  entropyRetries: new Map(), // hand -> re-sends after `unavailable` / `rate_limited`
  opened: false, // this socket opened (a refused one closes without)
  // refused for good (the session ended, the seat or the table is gone): no move is offered and no
  // clock runs any more, and the reason stays said
  refused: false,
  signalsSent: new Map(), // id -> label of my partner signals waiting for their ack
  entropyHex: new Map(), // hand -> the contribution this tab sent for it
  acceptedEntropy: new Map(), // hand -> this tab's contribution the server acknowledged
  errorMarks: new Map(), // id of my move or `back` -> errorMark() when it was sent
  names: new Map(), // seat -> the last player seen there: who left is still named in the result
  standingFor: null, // the match whose rating and chips change this page asked /api/me/standing for
  shownMatch: null, // the table's match number last rendered: a new one (a rematch) clears the last one's leftovers
  // the keyboard focus goes to the game once the board first shows (page load, or the start
  // button, whose seating box hides and would leave the focus on the page's body)
  focusGame: true,
  clockMarks: null, // {deadline, first, said}: the thresholds of my clock already announced
  backSent: null, // id of my `back` message waiting for its answer
  revealed: null, // the request of mine last brought into sight (revealRequest)
  turnRevealed: null, // my turn to play last brought into sight (revealMyTurn)
  // the partner signals of the hand in play this page already showed (live, or from a snapshot's
  // `partner_signals`): a snapshot adds only the others to the log
  signalsSeen: new Set(),
  seatsSeen: null, // seat -> the person seen there (null: free or a bot): whose arrival or leaving to log
  rematchUndone: null, // {match, text}: a rematch asked for that a player's leaving called off
};
// the account this page belongs to (the header's name): my own seat changes are not news to me
const myName = document.getElementById("me")?.dataset.userName ?? null;
// the house's published keys (/api/key), fetched once: anchors and records must be signed by the
// current one or by an older one that handed over to it (fairness.js keyLineage)
const houseKeys = fetchHouseKeys();

// --- connection -------------------------------------------------------------------------------

function setConn(stateName, text) {
  const node = $("conn-status");
  node.dataset.state = stateName;
  node.textContent = text;
}

function connect() {
  clearTimeout(state.reconnectTimer);
  // a socket still open or opening is replaced, not left to run beside the new one
  const previous = state.socket;
  if (previous && previous.readyState <= WebSocket.OPEN) {
    state.socket = null;
    previous.close();
  }
  const scheme = window.location.protocol === "https:" ? "wss" : "ws";
  const query = invite ? `?invite=${encodeURIComponent(invite)}` : "";
  const socket = new WebSocket(`${scheme}://${window.location.host}/ws/tables/${tableId}${query}`);
  state.socket = socket;
  state.opened = false;
  state.catchingUp = true;
  state.catchUpTo = null;
  state.entropySent = new Set();
  setConn("connecting", state.lastSeq ? "Reconectando…" : "Conectando…");
  socket.addEventListener("open", () => {
    socket.heard = performance.now();
    state.opened = true;
    state.connected = true;
    state.reconnectDelay = 250;
    send({ type: "hello", last_seq: state.lastSeq, epoch: state.epoch });
  });
  socket.addEventListener("message", (event) => {
    if (state.socket !== socket) return; // superseded (given up, or replaced): no news
    socket.heard = performance.now();
    if ($("conn-status").dataset.state === "slow") setConn("connected", "Conectado");
    let message;
    try {
      message = JSON.parse(event.data);
    } catch {
      return;
    }
    handle(message);
  });
  socket.addEventListener("close", () => {
    if (state.socket !== socket) return;
    state.connected = false;
    state.inFlight = null;
    // what this socket carried unanswered is lost with it: it may be sent again
    state.backSent = null;
    state.signalsSent.clear();
    if (!state.opened) {
      // refused before it opened (never welcomed, or a reconnect after a logout, a lost seat, a
      // table no longer served): ask the lobby why, and stop retrying on a plain refusal
      explainRefusal(socket);
      return;
    }
    setConn("reconnecting", "Conexão perdida: reconectando…");
    render();
    reconnectLater();
  });
}

async function explainRefusal(socket) {
  // the same address without the upgrade answers whether the socket would be let in, or why not
  const query = invite ? `?invite=${encodeURIComponent(invite)}` : "";
  try {
    await api("GET", `/ws/tables/${tableId}${query}`);
  } catch (err) {
    // another socket took over meanwhile (the network came back, `online`): it is the page's
    if (state.socket !== socket) return;
    if (err.code === "too_many_sockets" || err.code === "too_many_connections") {
      // too many table tabs open, or this table's socket opened too often lately: say so, and
      // keep trying (a tab closed elsewhere frees a place; the other comes back in seconds)
      showError(err.message);
      setConn("reconnecting", err.code === "too_many_sockets"
        ? "Conexões demais abertas: feche outras abas de mesa."
        : "Conexões demais com esta mesa: tentando de novo em instantes…");
      render();
      reconnectLater();
      return;
    }
    if (err.status === 404 || err.status === 403 || err.status === 401) {
      setConn("closed", "Sem acesso");
      state.refused = true;
      state.pending = [];
      state.inFlight = null;
      let text = err.message;
      if (err.status === 401) text = "Sua sessão terminou: entre de novo na sua conta e recarregue a página para voltar à mesa.";
      else if (invite && !state.table) text = "Não foi possível abrir esta mesa: o link de convite está errado ou a mesa não existe mais.";
      // a table this page never had (no invite, a wrong one): no hand of it to check here, and
      // no entropy to send (a player's review found the phrase offered under "Sem acesso")
      if (!state.table) $("fairness").hidden = true;
      if (err.code === "table_not_found") {
        // a table no longer served: a box says why, as well as the house knows, and the way on
        render();
        await showTableGone(text);
        return;
      }
      showError(text, { sticky: true });
      render();
      return;
    }
  }
  if (state.socket !== socket) return;
  setConn("reconnecting", navigator.onLine === false ? OFFLINE_TEXT
    : state.table ? "Conexão perdida: reconectando…" : "Sem conexão: tentando de novo…");
  render();
  reconnectLater();
}

/** The next connection, after the delay (doubling up to RECONNECT_MAX_MS): one timer at most. */
function reconnectLater() {
  clearTimeout(state.reconnectTimer);
  state.reconnectTimer = setTimeout(connect, state.reconnectDelay);
  state.reconnectDelay = Math.min(RECONNECT_MAX_MS, state.reconnectDelay * 2);
}

// A connection that died without a word (the network gone, a phone's radio asleep): the page
// hears nothing, and its socket stays "open" for minutes while the clocks run out (a phone
// review: 45 s offline, the page said "Conectado" and the match was lost by abandonment). The
// page asks the server (`ping`) after QUIET_MS of silence and gives the socket up after
// DEAD_MS; the browser's `offline` gives it up at once, and `online` reconnects without waiting.
const QUIET_MS = 10_000;
const DEAD_MS = 20_000;
// a move unanswered this long (a stalled link: a review's page said "Conectado" for 22 s while a
// tapped card stayed busy and the clock ran out): the page asks at once, and says so
const SLOW_MS = 3_000;
const SLOW_TEXT = "Conexão lenta: a sua jogada ainda não teve resposta…";
const OFFLINE_TEXT = "Sem internet: a mesa volta sozinha quando a conexão voltar.";

function giveUp(socket, text) {
  if (state.socket !== socket || state.refused) return;
  state.socket = null; // its close, whenever it comes, is no news
  state.connected = false;
  state.inFlight = null;
  state.backSent = null;
  state.signalsSent.clear();
  try {
    socket.close();
  } catch {
    // closing a dead socket may throw in some browsers: it is given up either way
  }
  setConn("reconnecting", text);
  render();
  reconnectLater();
}

setInterval(() => {
  const socket = state.socket;
  if (!socket || !state.opened || socket.readyState !== WebSocket.OPEN) return;
  const now = performance.now();
  const asked = socket.pinged !== undefined && socket.pinged > socket.heard;
  // a move sent and nothing heard since for SLOW_MS: the link is stalled, or slow
  const stalled = state.inFlight !== null && state.inFlightAt > socket.heard
    && now - state.inFlightAt > SLOW_MS;
  // the house reads a socket's messages in order: a ping sent after a move waiting on its
  // database is answered only after it, so a move in flight is given DEAD_MS of its own
  const moveWaits = state.inFlight !== null && now - state.inFlightAt < DEAD_MS;
  // given up only once a ping went unanswered (a tab whose timers slept past DEAD_MS asks first)
  if (asked && now - socket.pinged > DEAD_MS - QUIET_MS && !moveWaits) giveUp(socket, "Conexão perdida: reconectando…");
  else if (!asked && (stalled || now - socket.heard > QUIET_MS)) {
    socket.pinged = now;
    send({ type: "ping" });
  }
  if (stalled && $("conn-status").dataset.state === "connected") setConn("slow", SLOW_TEXT);
}, 1000);

// the invite link, copied whole (a phone showed a few of its characters in a read-only field)
$("invite-copy").addEventListener("click", async () => {
  const link = $("invite-link").value;
  const said = $("invite-copied");
  try {
    await navigator.clipboard.writeText(link);
    said.textContent = "Link copiado: cole-o para quem você convida.";
  } catch {
    // no clipboard here (a page served over plain HTTP from another machine): the link is
    // selected, for the system's own copy
    $("invite-link").focus();
    $("invite-link").select();
    said.textContent = "Link selecionado: copie-o pelo menu do aparelho.";
  }
});

window.addEventListener("offline", () => {
  if (state.socket && !state.refused) giveUp(state.socket, OFFLINE_TEXT);
});

window.addEventListener("online", () => {
  // a socket open or opening goes on; one closed or given up is replaced now
  if (state.refused || (state.socket && state.socket.readyState <= WebSocket.OPEN)) return;
  clearTimeout(state.reconnectTimer);
  state.reconnectDelay = 250;
  connect();
});

/**
 * The table is no longer served (or never was): to a player who played a match there the house
 * says how it ended (GET /api/me/tables/{id}); to anyone else it is "not found", with the
 * refusal's words (a private table is not told apart from an unknown id). Either way the page
 * offers the way on (the lobby, the table's public hands) and hides what can no longer be used:
 * the entropy phrase (no hand is dealt here any more), the fairness box and the log when they
 * hold nothing (a review: an empty "Jogo justo" still offered the phrase, no link onward).
 */
async function showTableGone(fallback) {
  let played = null;
  try {
    played = (await api("GET", `/api/me/tables/${tableId}`)).table;
  } catch {
    // unknown, a table where I played no match, or no answer: the refusal's own words
  }
  $("table-gone-title").textContent = played ? "Mesa encerrada" : "Mesa não encontrada";
  $("table-gone-text").textContent = played ? goneText(played) : fallback;
  const hands = $("table-gone-hands");
  if (played?.hands) {
    // the table's finished hands are public (their records); /me/hands shows them by match
    hands.href = `/me/hands?table=${tableId}`;
    hands.textContent = played.hands === 1 ? "Ver a mão desta mesa" : `Ver as ${played.hands} mãos desta mesa`;
  } else {
    hands.href = "/me/hands";
    hands.textContent = "Ver minhas mãos";
  }
  $("entropy-box").hidden = true;
  $("fairness").hidden = !state.handInfo && !$("fair-log").childElementCount;
  $("log-box").hidden = !$("log").childElementCount;
  $("table-gone").hidden = false;
  $("table-gone-title").focus();
}

/** How a table I played at ended: my last match there, and that the table closed. */
function goneText(played) {
  const match = played.last_match ?? {};
  const side = played.seats === 4 ? "sua dupla" : "você";
  const result = match.won === true ? ` (${side} ganhou)` : match.won === false ? ` (${side} perdeu)` : "";
  switch (match.termination) {
    case "cancelled":
      // RULES.md: at a private or training table a seat empty for 60 s cancels the match
      return played.kind === "private" || played.kind === "training"
        ? "A partida foi cancelada porque um lugar ficou vazio por 60 s (ninguém ganhou), e a mesa foi fechada."
        : "A partida foi cancelada (ninguém ganhou), e a mesa foi fechada.";
    case "target":
      return `A partida terminou${result}, e a mesa foi fechada: todos saíram, ou ficou muito tempo sem ninguém.`;
    case "abandonment":
      return `A partida terminou por abandono${result}, e a mesa foi fechada.`;
    default:
      return "A mesa foi fechada: todos saíram, ou ficou muito tempo sem ninguém.";
  }
}

function send(message) {
  if (state.socket && state.socket.readyState === WebSocket.OPEN) {
    state.socket.send(JSON.stringify(message));
    return true;
  }
  return false;
}

/** Start over from a fresh snapshot: used when we notice a gap in the numbered events. */
function resync() {
  state.lastSeq = 0;
  state.socket?.close();
}

// --- messages ---------------------------------------------------------------------------------

function handle(message) {
  let numbered = false;
  if (message.seq !== undefined && message.type !== "welcome" && message.type !== "snapshot"
      && message.type !== "ack") {
    if (message.seq <= state.lastSeq) return; // already seen (a replay after reconnecting)
    if (message.seq !== state.lastSeq + 1) {
      resync();
      return;
    }
    state.lastSeq = message.seq;
    numbered = true;
  }
  switch (message.type) {
    case "welcome": {
      // the catch-up ends at the welcome's `seq`: nothing to catch up when the same server run
      // has nothing newer than what this page processed; else a replay or a snapshot follows
      const upToDate = state.epoch !== null && message.epoch === state.epoch && state.lastSeq > 0
        && message.seq === state.lastSeq;
      state.seat = message.seat;
      seatsChanged(state.table, message.table);
      state.table = message.table;
      state.signals = message.signals ?? [];
      state.epoch = message.epoch;
      state.offsetMs = message.server_time_ms - Date.now();
      setConn("connected", "Conectado");
      state.catchUpTo = message.seq;
      if (upToDate) caughtUp();
      break;
    }
    case "snapshot":
      state.lastSeq = message.seq;
      seatsChanged(state.table, message.table);
      state.table = message.table;
      state.handInfo = message.hand;
      state.view = message.view;
      state.viewHand = message.hand?.hand ?? null;
      state.pending = message.pending ?? [];
      state.absent = new Set(message.absent ?? []);
      state.automatic = message.automatic ?? [];
      state.offsetMs = message.server_time_ms - Date.now();
      state.inFlight = null;
      state.backSent = null; // the snapshot says whether my seat is absent now
      // the signals my partner sent me in this hand: also those sent while I was away
      partnerSignals(message.partner_signals ?? []);
      // opened after the hand's `commitment` event: its check (a new chain's signed anchor
      // is in the snapshot's hand) is made now, before any entropy of mine is sent
      if (state.handInfo && state.chainCheck?.hand !== state.handInfo.hand) checkCommitment(state.handInfo);
      if (state.handInfo?.phase === "entropy") noteCommitment(state.handInfo.hand, state.handInfo.commitment);
      if (state.view?.hand?.result && state.handInfo) {
        // while the next hand collects entropy, the view still shows the finished one before it
        showSummary(state.view, state.handInfo.hand - (state.handInfo.phase === "entropy" ? 1 : 0));
      } else if (state.view?.outcome && (message.table.status === "finished" || message.table.status === "closed")) {
        // the match is over (a reload after it): the view shows its last hand, the table its number
        endMatch({ ...state.view.outcome, score: state.view.score, forfeit_team: null });
      }
      // a snapshot is a whole catch-up (after a welcome, or an `in_doubt` reload at any time)
      if (state.catchingUp) caughtUp();
      else maybeSendEntropy();
      break;
    case "table":
      // replayed after a reconnect: older than the welcome's table, which said what changed
      // meanwhile (comparing it with this one would log seats changing back and forth)
      if (state.catchingUp && state.catchUpTo !== null && message.seq <= state.catchUpTo) break;
      seatsChanged(state.table, message.table);
      // a rematch: the log goes straight on from the last match's end otherwise (its hands keep
      // the table's numbering: the chain's)
      if (state.table && message.table.match > (state.table.match ?? 0) && state.table.match > 0) {
        log(`Revanche: começa a partida ${message.table.match}.`);
      }
      // a broadcast: the same for everyone, so its `you` is not mine (the welcome said my seat)
      state.table = { ...message.table, you: state.seat, invite: message.table.invite ?? state.table?.invite ?? null };
      break;
    case "commitment":
      checkCommitment(message);
      noteCommitment(message.hand, message.commitment);
      state.handInfo = {
        hand: message.hand, phase: "entropy", commitment: message.commitment,
        chain_start: message.chain_start, entropy_deadline_ms: message.entropy_deadline_ms,
        // a server restart commits the same hand again: who already sent theirs still counts
        entropy_from: state.handInfo?.hand === message.hand ? state.handInfo.entropy_from ?? [] : [],
      };
      // in the Jogo justo box, visible but not read aloud every hand (hex digits)
      fairLog(`Mão ${message.hand}: compromisso publicado (${message.commitment.slice(0, 16)}…).`);
      maybeSendEntropy();
      break;
    case "entropy":
      if (state.handInfo && state.handInfo.hand === message.hand) {
        state.handInfo.entropy_from = [...new Set([...(state.handInfo.entropy_from ?? []), message.seat])];
      }
      // my seat's contribution was received and written (on this socket or an earlier one)
      if (message.seat === state.seat && myContribution(tableId, message.hand)) {
        setContributionState(tableId, message.hand, "received");
      }
      break;
    case "update": {
      if (state.handInfo && state.handInfo.hand === message.hand && state.handInfo.phase === "entropy") {
        state.handInfo.phase = "playing";
        // dealt without mine: a contribution of mine for it did not make it in time. Noted here
        // too while catching up, which decides nothing else: its replay may go on to the next
        // hand, and this one would stay "sent"
        if (seated() && !(state.handInfo.entropy_from ?? []).includes(state.seat)) {
          noteLateEntropy(message.hand);
        }
        maybeSendEntropy();
      }
      // the view before this update: the request a vote in it answered
      const before = state.view;
      state.view = message.view;
      state.viewHand = message.hand;
      state.pending = message.pending ?? [];
      state.absent = new Set(message.absent ?? []);
      // a raise or an envido call that a team vote decided is the team's, not its last voter's
      const byVote = message.events.some((event) => event.type === "vote_cast");
      for (const event of message.events) {
        // a seat that acted itself ends its streak of automatic actions (the server's too: it
        // says so with an `absent` event only when the seat was absent, not after a `back`)
        if (OWN_MOVES.has(event.type) && Number.isInteger(event.seat) && !event.automatic) {
          state.automatic[event.seat] = 0;
        }
        describeEvent(event, message.view, message.hand, before, byVote);
      }
      break;
    }
    case "absent": {
      const already = state.absent.has(message.seat);
      if (message.absent) state.absent.add(message.seat);
      else state.absent.delete(message.seat);
      state.automatic[message.seat] = message.automatic ?? 0;
      // after a `back`, the clocks as they now run (restarted in full)
      if (message.pending) state.pending = message.pending;
      if (message.absent && !already) log(`${seatName(message.seat)} está ausente: as decisões são automáticas até voltar a jogar.`);
      if (!message.absent && already && message.seat === state.seat && message.pending) {
        // the streak is not reset by saying so (RULES.md, Clocks): only by acting
        const streak = message.automatic ?? 0;
        const limit = state.table?.abandon_limit;
        log(`Você voltou: suas decisões têm de novo o tempo inteiro do relógio.${streak > 0 && limit
          ? ` A contagem de ações automáticas seguidas (${streak} de ${limit}) só zera quando você jogar.` : ""}`);
      }
      break;
    }
    case "hand_record":
      state.records.set(message.hand, message.url);
      state.recordChecks.set(message.hand, checkRecord(message.hand, message.url));
      rememberPlayedHand({
        table: tableId, hand: message.hand, variant: state.table?.variant, seat: state.seat, at: Date.now(),
        // the record cannot tell a bot (which never sends entropy) from an absent player: the hand page can
        bots: (state.table?.players ?? []).filter((p) => p.bot).map((p) => p.seat),
        // the commitment this page was shown before the deal: the hand page compares the record with it
        commitment: seenCommitment(tableId, message.hand),
      });
      fairLog(`O registro assinado da mão ${message.hand} está público.`);
      break;
    case "match_over":
      state.matchOver = { ...message, match: state.table?.match ?? null };
      endMatch(message);
      break;
    case "ack":
      if (state.errorMarks.has(message.id)) {
        clearErrorsBefore(state.errorMarks.get(message.id));
        state.errorMarks.delete(message.id);
      }
      if (message.id === state.inFlight) state.inFlight = null;
      if (message.id === state.backSent) state.backSent = null;
      if (entropyHand(message.id) !== null) {
        const hand = entropyHand(message.id);
        state.entropySent.delete(hand);
        keepAccepted(hand);
        setContributionState(tableId, hand, "received");
      }
      if (state.signalsSent.has(message.id)) {
        const label = state.signalsSent.get(message.id);
        state.signalsSent.delete(message.id);
        const note = $("signal-sent");
        // the server keeps a signal for a disconnected partner until they come back in this hand
        const away = partnerAway();
        note.textContent = away
          ? `Sinal guardado: “${label}”. O parceiro está desconectado e o verá se voltar ainda nesta mão.`
          : `Sinal enviado ao parceiro: “${label}”.`;
        clearTimeout(note.timer);
        note.timer = setTimeout(() => { note.textContent = ""; }, away ? 15000 : 8000);
        const hand = state.viewHand ?? state.handInfo?.hand ?? null;
        log(`Você sinalizou ao parceiro: “${label}”${hand === null ? "" : ` (mão ${hand})`}${away ? "; o parceiro está desconectado e o verá se voltar ainda nesta mão" : ""}.`);
      }
      break;
    case "error":
      state.signalsSent.delete(message.id);
      state.errorMarks.delete(message.id);
      if (message.id !== null && message.id === state.backSent) state.backSent = null;
      // a move refused as stale within the hand it was chosen in: the clock (or a move of
      // mine before it) acted for my seat first (`last_seq`); across hands, the hand ended
      const sameHand = message.id !== null && message.id === state.inFlight
        && state.inFlightHand === state.viewHand;
      if (message.id !== null && message.id === state.inFlight) state.inFlight = null;
      if (entropyHand(message.id) !== null) entropyRefused(entropyHand(message.id), message);
      else if (message.error === "stale") showError(sameHand ? STALE_DECISION : STALE_MOVE);
      else showError(apiMessage(message.error, message.message));
      break;
    case "signal":
      receiveSignal(message);
      break;
    case "clocks":
      state.pending = message.pending ?? [];
      if (message.reason === "returned") {
        // an absent player came back to an empty seat: their decision has the full clock, once
        log(message.seat === state.seat
          ? "Você voltou à mesa: esta decisão tem o tempo inteiro do relógio (as seguintes, 2 s, até você jogar)."
          : `${seatName(message.seat)} voltou à mesa: o prazo da decisão recomeçou inteiro.`);
      } else {
        // the house could not save moves for a while (a database fault): every clock starts
        // again in full, and a move it refused meanwhile can be made again
        log("A casa ficou um momento sem conseguir salvar as jogadas: os prazos recomeçaram inteiros.");
      }
      break;
    default:
      break;
  }
  if (numbered && state.catchingUp && state.catchUpTo !== null && state.lastSeq >= state.catchUpTo) caughtUp();
  render();
}

/** A partner signal's identity: the same signal live and in a snapshot's `partner_signals`. */
function signalKey(signal) {
  return `${signal.from}:${signal.code}:${signal.at_ms}`;
}

/** My partner's signal: on screen (the latest one) and in the log, each signal once. */
function receiveSignal(signal) {
  const key = signalKey(signal);
  const node = $("signal-received");
  // it belongs to the hand in play: a new hand (or match) clears it
  const hand = state.viewHand ?? state.handInfo?.hand ?? null;
  // an assertive live region: written only for a signal it does not show yet
  if (node.dataset.key !== key) {
    node.textContent = `Parceiro: “${signal.label}”`;
    node.dataset.key = key;
    $("signal-seen").textContent = node.textContent;
    $("signal-seen").hidden = false;
  }
  node.dataset.hand = hand === null ? "" : String(hand);
  if (state.signalsSeen.has(key)) return;
  state.signalsSeen.add(key);
  log(`${seatName(signal.from)} sinalizou: “${signal.label}”${hand === null ? "" : ` (mão ${hand})`}.`);
}

/** A snapshot's `partner_signals` (oldest first): what my partner signalled in the hand in play,
 * also while I was away or before a reload. The latest is shown; the log gets those it lacks. */
function partnerSignals(signals) {
  const node = $("signal-received");
  const hand = state.viewHand ?? state.handInfo?.hand ?? null;
  // one still on screen from an earlier hand (its next deal was not seen) is not this hand's
  if (node.dataset.hand && hand !== null && node.dataset.hand !== String(hand)) clearSignalReceived();
  for (const signal of signals) receiveSignal(signal);
}

/**
 * Who sits where changed since this page last looked (a `table` event, a snapshot, a lobby
 * answer): a person leaving, sitting down or changing seats is logged (`caio2 saiu da mesa.`),
 * and so is a rematch their leaving called off, which the end box says too. Bots come and go
 * with the matches: not news. My own changes neither.
 */
function seatsChanged(previous, table) {
  const now = (table?.players ?? []).map((p) => (p.name !== null && !p.bot ? p.name : null));
  const seen = state.seatsSeen;
  state.seatsSeen = now;
  if (seen === null || seen.length !== now.length) return;
  const where = (names) => new Map(names.flatMap((name, seat) => (name === null ? [] : [[name, seat]])));
  const before = where(seen);
  const after = where(now);
  const left = [];
  for (const [name, seat] of before) {
    if (name === myName) continue;
    if (!after.has(name)) left.push(name);
    else if (after.get(name) !== seat) log(`${name} mudou para o lugar ${after.get(name) + 1}.`);
  }
  for (const [name, seat] of after) {
    if (name !== myName && !before.has(name)) log(`${name} sentou no lugar ${seat + 1}.`);
  }
  for (const name of left) log(`${name} saiu da mesa.`);
  // a disconnected person at a private or training table cancels the match unless back in time
  for (const player of table.players ?? []) {
    const was = previous?.players?.[player.seat];
    if (player.name === null || player.name === myName || was?.name !== player.name) continue;
    const due = player.cancel_at_ms;
    const wasDue = was.cancel_at_ms;
    if (Number.isInteger(due) && !Number.isInteger(wasDue)) {
      log(`${player.name} se desconectou: se não voltar em ${secondsLeft(due)} s, a partida é cancelada.`);
    } else if (!Number.isInteger(due) && Number.isInteger(wasDue) && player.connected && table.status === "playing") {
      log(`${player.name} voltou à mesa.`);
    }
  }
  // players had asked for a rematch and one left the finished table: it reopens for seating
  const asked = (previous?.rematch ?? []).some((seat) => previous.players?.[seat] && !previous.players[seat].bot);
  if (left.length && asked && previous.status === "finished" && table.status !== "finished" && table.status !== "playing") {
    const who = left.length === 1 ? `${left[0]} saiu` : `${left.join(" e ")} saíram`;
    const text = `A revanche foi desfeita: ${who} da mesa.`;
    state.rematchUndone = { match: table.match, text };
    log(text);
  }
}

/** The catch-up after a (re)connection is complete: now see whether this hand needs my entropy. */
function caughtUp() {
  state.catchingUp = false;
  maybeSendEntropy();
}

/**
 * The match is over (`match_over`, or a snapshot whose view has the outcome). An abandonment or
 * a cancellation ends it in the middle of a hand without any `update`: the last view still has
 * my turn, my clock and my buttons. So nothing is pending any more, nobody is absent, the hand it
 * cut off shows as ended (no turn, no legal move), and the log says how the match ended, once.
 */
function endMatch(over) {
  state.pending = [];
  state.absent = new Set();
  state.automatic = [];
  const view = state.view;
  const number = state.viewHand ?? state.table?.hand ?? null;
  const outcome = view?.outcome ?? { termination: over.termination, winner: over.winner };
  const hand = view?.hand ?? null;
  const cut = Boolean(hand) && (!hand.result || hand.result.reason === "abandoned");
  if (view) {
    state.view = {
      ...view, outcome, legal: [], pending: [],
      hand: hand && !hand.result
        ? { ...hand, turn: null, result: { winner_team: null, points: 0, reason: "abandoned" } }
        : hand,
    };
    if (state.view.hand?.result) showSummary(state.view, number);
  }
  const match = state.table?.match ?? null;
  if (match !== null && state.endLogged === match) return; // a `match_ended` event said it
  state.endLogged = match;
  if (over.termination !== "target") {
    // a hand dealt but not yet shown (still collecting entropy) is cut off too
    const dealing = state.handInfo?.phase === "entropy" ? state.handInfo.hand : null;
    if (cut) log(`Fim da mão ${number}: ${cutReason(outcome)}; ninguém marca.`);
    else if (dealing !== null) log(`Fim da mão ${dealing}: ${cutReason(outcome)}; ninguém marca.`);
  }
  // a player who left the match in play resigned it (`forfeit_trigger` "left"): named, in 2x2 too
  const resigned = over.termination === "abandonment" && over.forfeit_trigger === "left"
    && Number.isInteger(over.forfeit_seat) ? over.forfeit_seat : null;
  const how = resigned !== null
    ? `Fim da partida: ${seatName(resigned)} desistiu e saiu da mesa; ${teamMid(over.winner)} venceu.`
    : {
      abandonment: `Fim da partida por abandono: ${teamName(over.winner)} venceu.`,
      cancelled: "Fim da partida: cancelada, ninguém ganha.",
    }[over.termination] ?? `Fim da partida: ${over.winner === null ? "sem vencedor" : `${teamName(over.winner)} venceu`}.`;
  log(`${how} Placar final: ${scoreText(over.score ?? view?.score ?? [0, 0])}.`);
}

/** Is the match at this table over (its `match_over` seen, or a snapshot of a finished table)? */
function matchEnded() {
  const table = state.table;
  if (!table) return false;
  if (state.matchOver && state.matchOver.match === table.match) return true;
  return Boolean(state.view?.outcome) && (table.status === "finished" || table.status === "closed");
}

/** The hand an entropy message's id names (`e<hand>`), or null for any other id. */
function entropyHand(id) {
  return typeof id === "string" && /^e[0-9]+$/.test(id) ? Number(id.slice(1)) : null;
}

/**
 * Send my contribution when the current hand still collects entropy and has none from my seat.
 * Decided only once a (re)connection has caught up: a replay may show the hand already dealt. A
 * contribution made earlier for the hand (stored in this browser) is sent again unchanged; a new
 * one is made only when there is none. A hand dealt without mine marks a stored, unconfirmed
 * contribution as not arrived in time.
 */
/** `hand` was dealt without my contribution: one of mine for it did not make it in time. */
function noteLateEntropy(hand) {
  if (myContribution(tableId, hand) && contributionState(tableId, hand) !== "received") {
    setContributionState(tableId, hand, "late");
  }
}

function maybeSendEntropy() {
  const info = state.handInfo;
  if (state.catchingUp || !info || state.seat === null || state.seat === undefined) return;
  const hand = info.hand;
  if ((info.entropy_from ?? []).includes(state.seat)) {
    if (myContribution(tableId, hand)) setContributionState(tableId, hand, "received");
    return;
  }
  if (info.phase !== "entropy") {
    noteLateEntropy(hand);
    return;
  }
  if (contributionState(tableId, hand) === "received" || state.entropySent.has(hand)) return;
  let hex = myContribution(tableId, hand);
  if (!hex) {
    const phrase = phraseBytes();
    // the phrase exactly as typed (UTF-8, no normalisation), else 32 bytes from the CSPRNG
    const bytes = phrase ?? crypto.getRandomValues(new Uint8Array(32));
    hex = bytesToHex(bytes);
    rememberContribution(tableId, hand, hex);
  }
  setContributionState(tableId, hand, "sent");
  if (send({ type: "entropy", id: `e${hand}`, hand, hex })) {
    state.entropySent.add(hand);
    state.entropyHex.set(hand, hex);
  }
}

/**
 * Two tabs of this table may each make a contribution for a hand (each read none stored, at
 * the same moment) and send it: the server takes one and refuses the other (`entropy_duplicate`),
 * which may be the one stored last, and the page's check of the record would then fail an
 * honest hand. The tab whose contribution was acknowledged keeps it stored: at the ack, and
 * again whenever another tab overwrites it (the `storage` event).
 */
function keepAccepted(hand) {
  const hex = state.entropyHex.get(hand);
  if (!hex) return;
  state.acceptedEntropy.set(hand, hex);
  if (myContribution(tableId, hand) !== hex) rememberContribution(tableId, hand, hex);
}

window.addEventListener("storage", (event) => {
  const hand = contributionHandOf(event.key, tableId);
  if (hand === null) return;
  const accepted = state.acceptedEntropy.get(hand);
  if (accepted && event.newValue !== accepted) rememberContribution(tableId, hand, accepted);
});

/** The server refused my entropy message for `hand`. */
function entropyRefused(hand, message) {
  state.entropySent.delete(hand);
  const code = message.error;
  if (code === "entropy_duplicate") return; // my seat's is already in (its `entropy` event says so)
  if (code === "entropy_closed") {
    // the hand was dealt (or moved on) before it arrived: the record will show my seat absent
    if (contributionState(tableId, hand) !== "received" && myContribution(tableId, hand)) {
      setContributionState(tableId, hand, "late");
      showError(`Sua entropia da mão ${hand} não chegou a tempo: a mão foi distribuída sem ela.`);
    }
    return;
  }
  if (code in ENTROPY_RETRY_MS) {
    // nothing was taken: send the same bytes again while the hand still collects entropy
    const tries = (state.entropyRetries.get(hand) ?? 0) + 1;
    state.entropyRetries.set(hand, tries);
    if (tries <= ENTROPY_RETRIES) {
      setTimeout(() => {
        if (state.handInfo?.hand === hand && state.handInfo.phase === "entropy") maybeSendEntropy();
      }, ENTROPY_RETRY_MS[code] * tries);
      return;
    }
  }
  showError(apiMessage(code, message.message));
}

const MAX_PHRASE_BYTES = 256;

/** The typed phrase's bytes, or null for none (or one too long, which the form points out). */
function phraseBytes() {
  const input = $("entropy-phrase");
  const bytes = new TextEncoder().encode(input.value);
  if (bytes.length === 0 || bytes.length > MAX_PHRASE_BYTES) return null;
  return bytes;
}

$("entropy-phrase").addEventListener("input", () => {
  const input = $("entropy-phrase");
  const size = new TextEncoder().encode(input.value).length;
  const tooLong = size > MAX_PHRASE_BYTES;
  input.setAttribute("aria-invalid", String(tooLong));
  $("entropy-phrase-error").hidden = !tooLong;
  $("entropy-phrase-error").textContent = tooLong
    ? `A frase tem ${size} bytes; o máximo é ${MAX_PHRASE_BYTES}. Sem correção, o navegador usa entropia aleatória.`
    : "";
});

// --- fairness, checked live -------------------------------------------------------------------

/**
 * A hand's commitment must be the seed the previous hand revealed (FAIRNESS.md 3), or, when it
 * starts a new seed chain, the anchor of a statement the house signed before any entropy.
 */
async function checkCommitment(message) {
  const hand = message.hand;
  let result = { hand, state: "unknown", text: "sem a mão anterior para comparar (aberta no meio da partida)" };
  if (message.anchor) {
    const anchor = message.anchor;
    const keys = await houseKeys;
    const statement = anchor !== null && typeof anchor === "object" && anchor.kind === "seed_anchor"
      && anchor.version === VERSION;
    // signed by the key it carries (false also for a malformed one), and that key is the house's
    const signed = statement ? await verifySignature(anchor) : false;
    const matches = anchor.anchor === message.commitment && anchor.chain_start === hand
      && anchor.table === tableId;
    if (!statement) {
      result = { hand, state: "fail", text: `a âncora da nova cadeia não é uma declaração seed_anchor ${VERSION}` };
    } else if (signed === false || !matches) {
      result = { hand, state: "fail", text: "a âncora da nova cadeia não confere com o compromisso ou não está assinada pela casa" };
    } else if (keys !== null && !keys.keys.some((k) => k.public_key === anchor.public_key)) {
      result = { hand, state: "fail", text: `a âncora da nova cadeia foi assinada por outra chave, não pela chave publicada da casa (/api/key)${keys.keys.length > 1 ? " nem por uma chave anterior passada a ela" : ""}` };
    } else if (keys === null) {
      result = { hand, state: "unknown", text: `nova cadeia a partir da mão ${hand}: âncora igual ao compromisso, mas a chave publicada da casa (/api/key) não pôde ser obtida para conferir quem assinou` };
    } else {
      const older = keys.keys.find((k) => k.public_key === anchor.public_key && k.path.length > 1);
      const signer = older ? `por uma chave anterior da casa, ${older.key_id}, passada à atual` : "pela casa";
      result = signed === null
        // no Ed25519 in this browser's WebCrypto: nobody checked the signature here
        ? { hand, state: "unknown", text: `nova cadeia a partir da mão ${hand}: âncora igual ao compromisso, mas a assinatura não pôde ser conferida neste navegador (sem Ed25519 no WebCrypto): confira a cadeia da mesa na linha de comando` }
        : { hand, state: "ok", text: `nova cadeia a partir da mão ${hand}: âncora assinada ${signer} e igual ao compromisso` };
    }
  } else if (message.chain_start === hand) {
    result = { hand, state: "unknown", text: `nova cadeia a partir da mão ${hand}: a âncora assinada está na cadeia da mesa (/tables/${tableId}/chain)` };
  } else if (state.recordChecks.has(hand - 1)) {
    const previous = await state.recordChecks.get(hand - 1); // it may still be on its way
    if (state.seeds.has(hand - 1)) {
      result = state.seeds.get(hand - 1) === message.commitment
        ? { hand, state: "ok", text: `o compromisso da mão ${hand} é a semente revelada da mão ${hand - 1}` }
        : { hand, state: "fail", text: `o compromisso da mão ${hand} NÃO é a semente revelada da mão ${hand - 1}` };
    } else if (previous?.ok === false) {
      result = { hand, state: "unknown", text: `o registro da mão ${hand - 1} não passou na conferência: não há semente confiável para comparar com o compromisso da mão ${hand}` };
    }
  }
  state.chainCheck = result;
  renderFairness();
}

/**
 * The commitment shown for a hand before its deal (the `commitment` event, or a snapshot while the
 * hand collects entropy), kept with the hand: its record must carry it (FAIRNESS.md 3). Once my
 * entropy for the hand went out, the commitment it answered stays.
 */
function noteCommitment(hand, commitment) {
  if (typeof commitment !== "string") return;
  if (contributionState(tableId, hand) && seenCommitment(tableId, hand)) return;
  rememberSeenCommitment(tableId, hand, commitment);
}

/**
 * Fetch a finished hand's public record and check its deck and deal here, at once: {ok} once
 * checked (nothing when it could not be fetched). Only a record that passes gives its seed.
 */
async function checkRecord(hand, url) {
  let text;
  try {
    const response = await fetch(url, { headers: { Accept: "application/json" } });
    if (!response.ok) return;
    text = await response.text();
  } catch {
    return;
  }
  // pinned to the house's published keys (the current one and the older ones handed over to
  // it): a record signed by any other key fails `key`; and it must be the hand asked for
  // (`source`), not another hand's genuine record
  const keys = await houseKeys;
  const result = await verifyHandRecord(text, {
    pinnedKeys: keys?.keys ?? null, refusedKeys: keys?.refused ?? [], mine: myContribution(tableId, hand),
    expected: { table: tableId, hand },
    // the record must keep the commitment this page was shown before the deal (`seen`)
    seenCommitment: seenCommitment(tableId, hand),
  });
  const checks = explainLateContribution(result, contributionState(tableId, hand), state.seat);
  const failed = checks.filter((c) => c.status === "fail").map((c) => c.name);
  // only a record that passed gives the seed the next commitment is compared with
  if (result.readable && failed.length === 0) state.seeds.set(hand, result.record.seed);
  else state.seeds.delete(hand);
  const notes = [];
  const wrongHand = checks.find((c) => c.name === "source" && c.status === "fail");
  if (wrongHand) notes.push(`o servidor respondeu com o registro de outra mão: ${wrongHand.detail}`);
  if (checks.some((c) => c.name === "seen" && c.status === "fail")) {
    notes.push(`o compromisso do registro não é o compromisso que a mesa mostrou antes da mão (${seenCommitment(tableId, hand).slice(0, 16)}…): a semente foi trocada depois da entropia`);
  }
  if (checks.some((c) => c.name === "mine" && c.status === "warn")) notes.push("a sua entropia não chegou a tempo: a mão foi distribuída sem ela");
  if (keys === null) notes.push("a chave publicada da casa (/api/key) não pôde ser obtida: a chave do registro não foi conferida");
  const extra = notes.length ? `; ${notes.join("; ")}` : "";
  state.lastCheck = failed.length
    ? { hand, state: "fail", text: `mão ${hand}: FALHOU (${failed.join(", ")})${extra}` }
    : { hand, state: keys === null ? "unknown" : "ok", text: `mão ${hand}: semente, baralho e distribuição conferidos${extra}` };
  renderFairness();
  return { ok: failed.length === 0 };
}

// --- actions ----------------------------------------------------------------------------------

// A double tap on a phone: the first tap's move rebuilds the buttons at once (a round won, my
// lead again; the next mão de onze; my vote changed), and the second lands on whatever came
// under the finger: the next card's "Cobrir", "Mudar meu voto: seis!", a second "Correr". A
// move is not taken from the second click of a double click (`detail` > 1), nor from a touch
// within TAP_GUARD_MS and TAP_GUARD_PX of the touch that made the last move (a phone review).
// A mouse's single clicks and the keyboard (detail 0) are never held back.
const TAP_GUARD_MS = 500;
const TAP_GUARD_PX = 48;
const lastPress = { at: -Infinity, x: 0, y: 0, touch: false };
let moveTouch = null; // the touch that made the last move
document.addEventListener("pointerdown", (event) => {
  Object.assign(lastPress, { at: event.timeStamp, x: event.clientX, y: event.clientY,
    touch: event.pointerType === "touch" });
}, true);

/** Whether `event` (a click) was made by the latest touch: not a keyboard's (detail 0), nor a
 * click long after that touch (one a script or assistive technology fires). */
function byTouch(event) {
  return Boolean(event) && event.detail >= 1 && lastPress.touch
    && event.timeStamp - lastPress.at < 1000;
}

function doubleTap(event) {
  if (!event) return false;
  if (event.detail > 1) return true;
  if (!byTouch(event) || moveTouch === null) return false;
  return lastPress.at - moveTouch.at < TAP_GUARD_MS
    && Math.hypot(lastPress.x - moveTouch.x, lastPress.y - moveTouch.y) < TAP_GUARD_PX;
}

function act(action, event = null) {
  if (state.inFlight !== null || !action || state.refused || doubleTap(event)) return;
  const id = state.nextId++;
  // `last_seq`: the table as the player saw it; a move chosen before their seat's last action
  // (the clock's, while the link stalled) is refused as stale, not played at the next decision
  if (send({ type: "action", id, hand: state.viewHand, last_seq: state.lastSeq, action })) {
    moveTouch = byTouch(event) ? { ...lastPress } : null;
    state.inFlight = id;
    state.inFlightAt = performance.now();
    state.inFlightHand = state.viewHand;
    state.errorMarks.set(id, errorMark());
    render();
  } else {
    showError(OFFLINE);
  }
}

/** How many passing errors were said so far: a move sent now is later than all of them. */
function errorMark() {
  return showError.serial ?? 0;
}

/**
 * A move of mine was accepted (its `ack`, a lobby answer): a passing error said before it was
 * sent ("Não há pedido para responder.") is stale, and goes at once instead of staying through
 * the next moves. One said since stays; a lasting reason (sticky) always stays.
 */
function clearErrorsBefore(mark) {
  const node = $("table-error");
  if (mark === undefined || showError.sticky || node.hidden || errorMark() > mark) return;
  clearTimeout(showError.timer);
  node.hidden = true;
  keepAlertsClear();
}

/** Lobby requests in flight (by path): their buttons stay disabled until the answer. */
const lobbyPending = new Set();

async function lobby(path, body) {
  if (lobbyPending.has(path)) return null;
  lobbyPending.add(path);
  const mark = errorMark();
  render();
  try {
    const { table } = await api("POST", `/api/tables/${tableId}/${path}`, body);
    clearErrorsBefore(mark);
    const seatChanged = table.you !== state.seat;
    state.seat = table.you;
    seatsChanged(state.table, table);
    state.table = table;
    render();
    // the socket serves the view of the seat it was opened for: sitting down (or moving) needs
    // a fresh one, which starts from a snapshot for the new seat
    if (seatChanged && path !== "leave") resync();
    return table;
  } catch (err) {
    showError(err.message);
    return null;
  } finally {
    lobbyPending.delete(path);
    render();
  }
}

function showError(text, { sticky = false } = {}) {
  const node = $("table-error");
  // a lasting reason (why this page lost the table) is not replaced by a passing error
  if (!sticky && showError.sticky && !node.hidden) return;
  showError.sticky = sticky;
  node.textContent = text;
  node.hidden = false;
  showError.serial = errorMark() + 1;
  clearTimeout(showError.timer);
  if (!sticky) {
    showError.timer = setTimeout(() => {
      node.hidden = true;
      keepAlertsClear();
    }, 6000);
  }
  keepAlertsClear();
}

// --- words ------------------------------------------------------------------------------------

function teamOf(seat) {
  return seat % 2;
}

/** My partner's seat entry at a 2x2 table (null for a spectator). */
function partnerOf() {
  return seated() ? state.table?.players?.[(state.seat + 2) % 4] ?? null : null;
}

/** My partner is a person whose connection is gone (the server keeps their signals, and counts
 * their pending vote as a decline, RULES.md). */
function partnerAway() {
  const partner = partnerOf();
  return Boolean(partner) && partner.name !== null && !partner.bot && partner.connected === false;
}

/** Am I seated (not a spectator)? */
function seated() {
  return state.seat !== null && state.seat !== undefined;
}

function seatCount() {
  return state.table?.seats ?? state.view?.seats ?? 2;
}

function seatName(seat) {
  if (seat === state.seat) return "Você";
  const current = state.table?.players?.[seat];
  // a seat emptied since: the name this page saw there, else who played it in this match (the
  // server's `played_by`, also after a reload), else the seat's number
  const played = current?.played_by ? { ...current, name: current.played_by } : current;
  const player = current && current.name === null ? state.names.get(seat) ?? played : current;
  // bots are all named "bot" by the server: told apart by seat ("Robô 2")
  const name = player ? playerName(player) : `Lugar ${seat + 1}`;
  const tag = seated() && teamOf(seat) === teamOf(state.seat) ? " (parceiro)" : "";
  return `${name}${tag}`;
}

/** A seat in the middle of a sentence ("você", not "Você"). */
function seatMid(seat) {
  return seat === state.seat ? "você" : seatName(seat);
}

/** A team as the subject of a sentence: a person in 1x1, "Nossa dupla" / "A dupla adversária" in 2x2. */
function teamName(team) {
  if (team === null || team === undefined) return "Ninguém";
  if (seatCount() === 2) return seatName(team);
  if (seated()) return team === teamOf(state.seat) ? "Nossa dupla" : "A dupla adversária";
  return `A dupla ${spectatorTeam(team)}`;
}

/** A team in the middle of a sentence: "você", "Robô 2", "a nossa dupla", "a dupla adversária". */
function teamMid(team) {
  if (team === null || team === undefined) return "ninguém";
  if (seatCount() === 2) return seatMid(team);
  if (seated()) return team === teamOf(state.seat) ? "a nossa dupla" : "a dupla adversária";
  return `a dupla ${spectatorTeam(team)}`;
}

/** "Of" a team, contracted as Portuguese wants it: "da nossa dupla", "da dupla adversária", "de Robô 2". */
function teamOfWords(team) {
  if (seatCount() === 2 || team === null || team === undefined) return `de ${teamMid(team)}`;
  return `d${teamMid(team)}`;
}

function spectatorTeam(team) {
  const names = (state.table?.players ?? []).filter((p) => p.seat % 2 === team).map((p) => playerName(p));
  return `${team === 0 ? "A" : "B"} (${names.join(" e ")})`;
}

/** A team on the scoreboard: short. 1x1 has no teams: the seat's player ("Você", "Robô 2", a name). */
function teamShort(team) {
  if (seatCount() === 2) return seatName(team);
  if (seated()) return team === teamOf(state.seat) ? "Nós" : "Eles";
  return `Dupla ${team === 0 ? "A" : "B"}`;
}

function variant() {
  return state.view?.variant ?? state.table?.variant ?? "paulista";
}

function pointsText(points) {
  return points === 1 ? "1 ponto" : `${points} pontos`;
}

/** Points the other side scores when the team at mão de onze / dez runs (RULES.md). */
const SPECIAL_RUN_POINTS = { paulista: 1, mineiro: 2 };

/**
 * A vote in words, for the request `hand` was asked (its view): a raise names the step it asks
 * for (`aumentar para seis`; Argentino calls it: `retruco`), and at a mão de onze / dez the
 * answers are the buttons' words (`jogar a mão de dez`, `correr da mão de dez`).
 */
function voteName(vote, hand) {
  if (vote === null || vote === undefined) return null; // another team's vote: only that it was cast
  const arg = variant() === "argentino";
  const request = hand?.request;
  if (request?.kind === "special" && request.name) {
    if (vote === "accept") return `jogar a ${request.name}`;
    if (vote === "decline") return `correr da ${request.name}`;
  }
  if (vote === "raise" && hand?.next_raise?.name) {
    return arg ? hand.next_raise.name : `aumentar para ${hand.next_raise.name}`;
  }
  return (arg ? VOTE_NAMES_AR : VOTE_NAMES)[vote] ?? vote;
}

/** "Primeira resposta vale" (table mode `first`): a partner's answer is the team's, no vote. */
function firstAnswer() {
  return state.table?.mode === "first";
}

/** What a partner did with a request: voted (mode `vote`) or answered for the team (`first`). */
function voteVerb() {
  return firstAnswer() ? "respondeu" : "votou";
}

/** An envido chain by its names: "EER" is "envido, envido, real envido". */
function envidoChain(chain) {
  return [...(chain ?? "")].map((letter) => ENVIDO_LETTERS[letter] ?? letter).join(", ");
}

function capitalized(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Why a hand ended, as a phrase for the middle of a sentence. */
function handEndReason(result, view) {
  const arg = (view?.variant ?? variant()) === "argentino";
  const loser = result.winner_team === null || result.winner_team === undefined ? null : 1 - result.winner_team;
  switch (result.reason) {
    case "rounds":
      return "decidida nas rodadas";
    case "tied":
      return "as rodadas empataram";
    case "declined":
      // said without parentheses: the log puts the reason in parentheses ("Fim da mão: … (…).")
      if (loser === null) return "o pedido foi recusado";
      return arg ? `${teamMid(loser)} disse no quiero` : `${teamMid(loser)} correu do ${declinedStep(result, view) ?? "pedido"}`;
    case "ran":
      return `${loser === null ? "quem estava nela" : teamMid(loser)} correu da ${view?.hand?.special_name || "mão de onze"}`;
    case "fold": {
      // RULES.md: 1 more when envido could still have been called (round 1, none called, truco
      // not answered): the hand's value on screen does not say where that point came from
      const bonus = arg && result.points > (view?.hand?.value ?? result.points)
        ? `; ${pointsText(result.points - view.hand.value)} a mais porque o envido ainda podia ser cantado` : "";
      return `${teamMid(loser)}${seatCount() === 4 ? " inteira" : ""} foi al mazo${bonus}`;
    }
    case "match_ended":
      return "o envido encerrou a partida";
    case "abandoned":
      return cutReason(view?.outcome);
    default:
      return result.reason;
  }
}

/** The step a declined raise asked for, by its name ("seis"): the one above the points its
 * asker scored (RULES.md: declining scores the hand's value before the request). */
function declinedStep(result, view) {
  const rules = LADDERS[view?.variant ?? variant()];
  const step = rules ? rules.ladder.indexOf(result.points) : -1;
  return step >= 0 ? rules.names[step] ?? null : null;
}

/** A hand cut off by the end of the match: why. */
function cutReason(outcome) {
  if (outcome?.termination === "cancelled") return "mão interrompida: a partida foi cancelada";
  if (outcome?.termination === "abandonment" && outcome.winner !== null && outcome.winner !== undefined) {
    // leaving the match in play is resigning it (the match's `forfeit_trigger`, or the table's after a reload)
    const trigger = state.matchOver?.match === state.table?.match ? state.matchOver?.forfeit_trigger : state.table?.forfeit_trigger;
    return `mão interrompida: ${teamMid(1 - outcome.winner)} ${trigger === "left" ? "desistiu da" : "abandonou a"} partida`;
  }
  return "mão interrompida: a partida foi encerrada";
}

function actionLabel(action, hand) {
  const arg = variant() === "argentino";
  const request = hand?.request;
  switch (action.do) {
    case "raise": {
      // the engine's view names the step a raise asks for (a raise is legal only below the top)
      const { name, value } = hand.next_raise ?? { name: "truco", value: hand.value };
      const title = name.charAt(0).toUpperCase() + name.slice(1);
      return request?.kind === "truco" ? `${title}! (aumentar para ${value})` : `${title}! (vale ${value})`;
    }
    case "accept":
      if (request?.kind === "special") return `Jogar a ${request.name} (vale ${request.value})`;
      if (request?.kind === "envido") return "Quiero (envido)";
      return arg ? `Quiero (vale ${request?.value})` : `Aceitar (vale ${request?.value})`;
    case "decline":
      if (request?.kind === "special") return `Correr da ${request.name}`;
      if (request?.kind === "envido") return "No quiero (envido)";
      return arg ? "No quiero" : "Correr";
    case "fold":
      return "Ir al mazo";
    default: {
      // an envido call says what it makes the chain worth if accepted ("Truco! (vale 3)" did,
      // the envido calls did not: a new player could not tell a real envido from an envido)
      const worth = action.do in ENVIDO_NAMES ? envidoWorth(action.do, hand) : null;
      const name = ENVIDO_NAMES[action.do] ?? action.do;
      return worth === null ? name : `${name} (vale ${worth})`;
    }
  }
}

const ENVIDO_POINTS = { envido: 2, real_envido: 3 };
const CHAIN_CALL = { E: "envido", R: "real_envido", F: "falta_envido" };

/**
 * What the envido chain is worth if accepted with `call` added (RULES.md, Argentino): the sum of
 * its calls (envido 2, real envido 3), or, once falta envido is in it, what the leading team
 * lacks to reach the target. A call answering a truco starts a chain of its own.
 */
function envidoWorth(call, hand) {
  const request = hand?.request;
  const chain = request?.kind === "envido" ? [...(request.chain ?? "")].map((c) => CHAIN_CALL[c]) : [];
  const calls = [...chain, call];
  if (calls.includes("falta_envido")) {
    const view = state.view;
    return view?.score ? view.target - Math.max(...view.score) : null;
  }
  return calls.reduce((sum, c) => sum + (ENVIDO_POINTS[c] ?? 0), 0);
}

// --- event log --------------------------------------------------------------------------------

// "O que aconteceu" outlives a reload of this tab (sessionStorage: this tab, this account, this
// table); a reload starts from a snapshot, which has no events, so what happened while the page
// reloaded is not in it, and the log says where that gap is
const LOG_KEY = `barajamos.log.${myName ?? ""}.${tableId}`;
const LOG_LINES = 40;

function log(text) {
  const list = $("log");
  list.prepend(el("li", {}, text));
  while (list.children.length > LOG_LINES) list.lastChild.remove();
  // said in the order it happened (the visible list, newest first, is not a live region)
  const said = $("log-said");
  said.append(el("p", {}, text));
  while (said.children.length > LOG_LINES) said.firstChild.remove();
  try {
    // with the partner signals it tells, so that a snapshot's `partner_signals` are not told twice
    sessionStorage.setItem(LOG_KEY, JSON.stringify({
      lines: Array.from(list.children, (li) => li.textContent), signals: [...state.signalsSeen] }));
  } catch {
    // storage full or turned off: the log lives in the page only
  }
}

function restoreLog() {
  let kept;
  try {
    kept = JSON.parse(sessionStorage.getItem(LOG_KEY) ?? "null");
  } catch {
    return;
  }
  const strings = (list) => (Array.isArray(list) ? list.filter((item) => typeof item === "string") : []);
  const lines = strings(kept?.lines).slice(0, LOG_LINES - 1);
  if (!lines.length) return;
  $("log").replaceChildren(...lines.map((line) => el("li", {}, line)));
  state.signalsSeen = new Set(strings(kept.signals));
  log("Página recarregada: o que aconteceu durante a recarga não aparece aqui.");
}

/** The fairness notes of each hand: kept visible in the Jogo justo box, out of the live log. */
function fairLog(text) {
  const list = $("fair-log");
  list.prepend(el("li", {}, text));
  while (list.children.length > 40) list.lastChild.remove();
}

function describeEvent(event, view, handNumber, before = null, byVote = false) {
  const v = view?.variant ?? variant();
  // the hand a vote answered: the request was pending in the view before the update
  const voted = before?.hand?.request ? before.hand : view?.hand;
  switch (event.type) {
    case "hand_started":
      // the previous hand's summary stays up (titled with its number) until this hand ends;
      // the partner's last signal was about the previous hand
      clearSignalReceived();
      log(`Mão ${handNumber}${inMatch(handNumber)}: ${seatName(event.dealer)} deu as cartas; ${seatMid(event.mano)} é mão.${event.vira ? ` Vira: ${cardLabel(event.vira, v)}.` : ""}`);
      break;
    case "card_played":
      log(`${seatName(event.seat)} ${event.covered ? "cobriu uma carta" : `jogou ${cardLabel(event.card, v)}`}${event.automatic ? " (automático)" : ""}.`);
      break;
    case "raise_requested":
      log(`${byVote ? teamName(event.team) : seatName(event.seat)} pediu ${event.name}! (vale ${event.value})`);
      break;
    case "raise_accepted":
      log(`${teamName(event.team)} ${v === "argentino" ? "disse quiero" : "aceitou"}: a mão vale ${event.value}.`);
      break;
    case "raise_declined":
      // the side that scores named ("o outro lado" left the player to work out which it was)
      log(`${teamName(event.team)} ${v === "argentino" ? "disse no quiero" : "correu"}: ${teamMid(1 - event.team)} marca ${pointsText(event.points)}.`);
      break;
    case "vote_cast":
      // 1x1: no vote, the answer itself (raise_accepted, ...) is logged; only the clock's is said
      if ((view?.seats ?? seatCount()) === 4) {
        const verb = voteName(event.vote, voted);
        log(`${seatName(event.seat)} ${voteVerb()}${verb ? `: ${verb}` : ""}${event.automatic ? " (automático)" : ""}.`);
      } else if (event.automatic) {
        const verb = voteName(event.vote, voted);
        log(`O relógio respondeu por ${seatMid(event.seat)}${verb ? `: ${verb}` : ""} (automático).`);
      }
      break;
    case "vote_expired":
      log(`${teamName(event.team)} não combinou a tempo: ${v === "argentino" ? "vale no quiero" : "a dupla correu"}.`);
      break;
    case "special_hand_answered": {
      const special = view?.hand?.special_name || "mão de onze";
      log(`${teamName(event.team)} ${event.play ? `vai jogar a ${special}` : `correu da ${special}`}.`);
      break;
    }
    case "envido_called":
      log(`${byVote ? teamName(event.team) : seatName(event.seat)} cantou ${envidoChain(event.chain.slice(-1))}!${event.chain.length > 1 ? ` (${envidoChain(event.chain)})` : ""}`);
      break;
    case "envido_accepted":
      log(`Envido querido (${envidoChain(event.chain)}): ${sungTantos(event.tantos)}${quietTantos(event.tantos, view?.seats ?? seatCount(), "log", view?.hand?.players)}. ${seatName(event.winner_seat)} ganha ${pointsText(event.points)}.`);
      break;
    case "envido_declined":
      log(`Envido no querido (${envidoChain(event.chain)}): ${teamMid(event.team)} marca ${pointsText(event.points)}.`);
      break;
    case "round_ended":
      log(event.winner_team === null ? `Rodada ${event.round + 1}: empatou (cangou).` : `Rodada ${event.round + 1}: ${seatName(event.winner_seat)} ganhou.`);
      break;
    case "folded":
      log(`${seatName(event.seat)} foi al mazo.`);
      break;
    case "hand_ended": {
      // the score after the hand, my side first: nothing else reads it aloud. A hand cut off
      // (the envido reached the target, the match was abandoned) scored nothing itself, but
      // "ninguém marca" read as if the envido's points did not count either
      const reason = handEndReason({ ...event }, view);
      const cut = event.winner_team === null && (event.reason === "match_ended" || event.reason === "abandoned");
      log(`Fim da mão: ${cut ? reason : event.winner_team === null ? `ninguém marca (${reason})` : `${teamMid(event.winner_team)} marca ${pointsText(event.points)} (${reason})`}. Placar: ${scoreText(event.score ?? view?.score ?? [0, 0])}.`);
      showSummary(view, handNumber);
      break;
    }
    case "match_ended":
      log(`Fim da partida: ${event.winner === null ? "sem vencedor" : `${teamName(event.winner)} venceu`}. Placar final: ${scoreText(event.score ?? view?.score ?? [0, 0])}.`);
      state.endLogged = state.table?.match ?? null;
      break;
    default:
      break;
  }
}

/** The tantos the table sang, each with its player: "Robô 2 com 25, você com 31". */
function sungTantos(tantos) {
  return tantos.map((t) => `${seatMid(t.seat)} com ${t.tanto}`).join(", ");
}

/** Names joined as a sentence says them: "a", "a e b", "a, b e c". */
function andList(names) {
  return names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} e ${names[names.length - 1]}`;
}

/**
 * The tantos nobody sang (son buenas: never shown), after the sung ones, their players named:
 * the log's `; você: son buenas`, the summary's `; o tanto de Robô 2 não foi cantado (son
 * buenas)` (2x2: `; não cantaram o tanto (son buenas): você e Robô 4`).
 */
function quietTantos(tantos, seats, where, players = []) {
  // a player gone al mazo does not compete (RULES.md): neither sang nor said son buenas
  const gone = new Set((players ?? []).filter((p) => p.in_hand === false).map((p) => p.seat));
  const silent = [...Array(seats).keys()].filter((seat) => !gone.has(seat) && !tantos.some((t) => t.seat === seat));
  if (!silent.length) return "";
  if (seats !== 2) {
    const names = andList(silent.map(seatMid));
    return where === "log" ? `; ${names}: son buenas` : `; não cantaram o tanto (son buenas): ${names}`;
  }
  const quiet = silent[0];
  if (where === "log") return `; ${seatMid(quiet)}: son buenas`;
  return `; ${quiet === state.seat ? "o seu tanto" : `o tanto de ${seatName(quiet)}`} não foi cantado (son buenas)`;
}

/**
 * Who scored what in a finished hand, per team: the hand's points and the envido's (Argentino
 * scores the envido at once, in the same hand), e.g. "Você marcou 4 pontos nesta mão: 2 no
 * envido e 2 na mão (decidida nas rodadas)."
 */
function handHeadline(hand, view) {
  const result = hand.result;
  const reason = handEndReason(result, view);
  const envido = hand.envido?.result;
  const teams = new Map(); // team -> {total, parts}
  const add = (team, points, part) => {
    if (team === null || team === undefined || !points) return;
    const entry = teams.get(team) ?? { total: 0, parts: [] };
    entry.total += points;
    entry.parts.push(part(points));
    teams.set(team, entry);
  };
  add(envido?.winner_team, envido?.points, (p) => `${p} no envido`);
  add(result.winner_team, result.points, (p) => `${p} na mão (${reason})`);
  if (teams.size === 0) return `Ninguém marcou nesta mão (${reason}).`;
  const lines = [...teams].map(([team, { total, parts }]) => (parts.length === 1 && !envido
    ? `${teamName(team)} marcou ${pointsText(total)}${result.reason === "rounds" ? " nas rodadas" : `: ${reason}`}.`
    : `${teamName(team)} marcou ${pointsText(total)} nesta mão: ${parts.join(" e ")}.`));
  // the envido scored, but the hand itself gave nobody points (cut off, tied, ended by the envido)
  if (result.winner_team === null || result.winner_team === undefined) lines.push(`A mão: ${reason}.`);
  return lines.join(" ");
}

/**
 * A table's hands are numbered across its matches (as their records are): from a rematch on,
 * which hand of its match it is, " (1ª da partida 2)"; "" in a table's first match.
 */
function inMatch(handNumber) {
  const first = state.table?.match_first_hand;
  const match = state.table?.match;
  if (!Number.isInteger(first) || !Number.isInteger(handNumber) || !(match > 1) || handNumber < first) return "";
  return ` (${handNumber - first + 1}ª da partida ${match})`;
}

function showSummary(view, handNumber) {
  const hand = view?.hand;
  if (!hand?.result) return;
  const number = handNumber;
  state.summaryHand = number;
  const v = view.variant;
  const body = $("summary-body");
  const result = hand.result;
  const parts = [el("p", { class: "result", id: "summary-result" }, handHeadline(hand, view))];
  state.lastBoard = { number, match: state.table?.match ?? null, hand, v };
  // the rounds with their cards: the next hand is dealt at once, and clears the board with them
  const rounds = playedRounds(hand, v);
  if (hand.table.length) {  // a round the end cut short (a request declined, the mazo)
    rounds.push(roundItem(hand.round, [`${hand.round + 1}ª rodada: não terminou`], hand.table, v));
  }
  if (rounds.length) {
    parts.push(el("ol", { class: "rounds", id: "summary-rounds", "aria-label": "Rodadas da mão" }, rounds));
  }
  if (hand.envido?.result) {
    const e = hand.envido.result;
    const chain = capitalized(envidoChain(hand.envido.chain));
    if (e.accepted) {
      // every tanto the table sang; the others said "son buenas" and are never shown
      // (the hand's end cannot tell a fold before the envido from one after it: every player
      // without a sung tanto is named; the log, written as the envido was settled, can)
      const quiet = quietTantos(e.tantos, hand.players.length, "summary");
      parts.push(el("p", { id: "summary-envido" }, `${chain} — querido: `,
        sungTantos(e.tantos), quiet,
        `. ${seatName(e.winner_seat)} ganhou ${pointsText(e.points)}.`));
      const shown = hand.players.find((p) => p.seat === e.winner_seat)?.shown;
      if (shown) {
        // said on screen too: three cards under the envido line read as the hand's own
        const whose = e.winner_seat === state.seat ? "As suas cartas" : `As cartas de ${seatName(e.winner_seat)}`;
        parts.push(el("p", { class: "small", id: "summary-envido-cards" }, `${whose} no envido:`));
        parts.push(el("div", { class: "hand small", role: "group", "aria-labelledby": "summary-envido-cards" },
          shown.map((c) => cardFace(c, v))));
      }
    } else {
      parts.push(el("p", { id: "summary-envido" }, `${chain} — no querido: ${teamName(e.winner_team)} marcou ${pointsText(e.points)}.`));
    }
  }
  parts.push(el("p", { id: "summary-score" }, `Placar: ${scoreText(view.score)}`));
  if (number !== null) {
    parts.push(el("p", {}, el("a", { href: `/h/${tableId}/${number}`, id: "summary-record" },
      `Conferir o baralho da mão ${number} (jogo justo)`)));
  }
  body.replaceChildren(...parts);
  $("summary-title").textContent = number === null ? "Resumo da mão" : `Resumo da mão ${number}${inMatch(number)}`;
  $("summary").dataset.hand = number === null ? "" : String(number);
  $("summary").hidden = false;
}

/** A score with its sides named, mine first when I sit at the table ("Você 12 x 0 Robô 2", "Nós 3 x 5 Eles"). */
function scoreText(score) {
  const first = seated() ? teamOf(state.seat) : 0;
  const points = (team) => scorePoints(score[team], variant());
  return `${teamShort(first)} ${points(first)} x ${points(1 - first)} ${teamShort(1 - first)}`;
}

function showMatchOver(message) {
  // the target itself: the final score may pass it (RULES.md), "o placar final" said nothing
  const target = state.view?.target ?? (variant() === "argentino" ? 30 : 12);
  const why = message.termination === "target" ? `chegou aos ${target} pontos`
    : TERMINATIONS[message.termination] ?? message.termination;
  const mine = state.seat !== null && state.seat !== undefined;
  let text;
  const forfeit = message.termination === "abandonment" && (message.forfeit_team === 0 || message.forfeit_team === 1)
    ? message.forfeit_team : null;
  if (message.winner === null) text = message.termination === "cancelled" ? `${capitalized(why)}.` : `Sem vencedor: ${why}.`;
  else if (forfeit !== null) {
    // who abandoned, said plainly ("A dupla adversária venceu — abandono" read as if the
    // opponents had abandoned, to the partner of a player who left)
    const limit = state.table?.abandon_limit;
    // leaving a match in play ("Desistir e sair da mesa") is resigning: said so
    const quit = message.forfeit_trigger === "left"
      ? "desistiu da partida e saiu da mesa"
      : message.forfeit_trigger === "automatic_actions"
        ? `abandonou a partida: o relógio agiu ${Number.isInteger(limit) ? timesInARow(limit) : "vezes demais seguidas"} sem resposta`
        : "abandonou a partida (ações automáticas demais ou saída no meio dela)";
    // in 2x2, the partner who left is named (`forfeit_seat`), with their team
    const seat = message.forfeit_seat;
    const who = seatCount() === 4 && Number.isInteger(seat) && teamOf(seat) === forfeit
      ? `${seatName(seat)}${seated() && teamOf(seat) === teamOf(state.seat) ? "" : `, ${teamOfWords(forfeit)},`}`
      : null;
    if (mine) text = `${teamOf(state.seat) === message.winner ? "Vitória!" : "Derrota."} ${who ?? teamName(forfeit)} ${quit}.`;
    else text = `${teamName(message.winner)} venceu: ${who ?? teamMid(forfeit)} ${quit}.`;
  } else if (mine) text = `${teamOf(state.seat) === message.winner ? "Vitória!" : "Derrota."} ${teamName(message.winner)} venceu — ${why}.`;
  else text = `${teamName(message.winner)} venceu — ${why}.`;
  $("match-over-text").textContent = `${text} Placar final: ${scoreText(message.score)}.`;
  $("match-over").hidden = false;
}

/** At a ranked table, what the match moved for me: the rating and chips lines /me shows
 * (GET /api/me/standing), once the match is settled (right after it ends; a few tries). */
async function showStanding(match) {
  if (state.standingFor === match) return;
  state.standingFor = match;
  const ref = `ranked:${tableId}:${match}`;
  const node = $("match-over-standing");
  for (let attempt = 0; attempt < 5; attempt += 1) {
    if (attempt) await new Promise((resolve) => { setTimeout(resolve, 1000 * attempt); });
    let standing;
    try {
      // this match's lines only, however old it is (the newest page may no longer hold them)
      standing = await api("GET", `/api/me/standing?match=${encodeURIComponent(ref)}`);
    } catch {
      continue;
    }
    // rated and paid in one transaction: the rating line says the match is settled
    const history = standing.history ?? [];
    const rated = history.find((h) => h.match === ref && h.reason === "match");
    if (!rated) continue;
    // what the match itself moved (stake, prize or refund); an overturn on review comes after
    const ledger = (standing.chips?.ledger ?? []).filter((line) => line.match === ref);
    const sum = (lines) => lines.reduce((total, line) => total + line.amount, 0);
    const chips = sum(ledger.filter((line) => line.reason !== "reversal"));
    // as /me writes them: the rating with one decimal (a decimal comma), its change signed
    const decimal = (n) => n.toFixed(1).replace(".", ",");
    const signed = (n, text) => `${n > 0 ? "+" : n < 0 ? "−" : ""}${text(Math.abs(n))}`;
    let text = `Classificação: ${decimal(rated.before)} → ${decimal(rated.after)} (${signed(rated.delta, decimal)}). `
      + `Fichas: ${signed(chips, String)}`;
    const back = history.find((h) => h.match === ref && h.reason === "reversal");
    const returned = sum(ledger.filter((line) => line.reason === "reversal"));
    if (back || returned) {
      const what = [returned ? `${returned} ${returned === 1 ? "ficha devolvida" : "fichas devolvidas"}` : "",
        back ? `${signed(back.delta, decimal)} pontos devolvidos` : ""].filter(Boolean).join(" e ");
      text += `. Anulada na revisão do abandono: ${what}`;
    }
    node.textContent = `${text} (saldo ${standing.chips.balance}).`;
    node.hidden = false;
    return;
  }
}

// --- rendering --------------------------------------------------------------------------------

function secondsLeft(deadlineMs) {
  // rounded, not ceiled: the offset is measured one network delay late, so a fresh 20 s clock
  // would otherwise read 21
  return Math.max(0, Math.round((deadlineMs - (Date.now() + state.offsetMs)) / 1000));
}

function render() {
  // "busy" while an action waits for its ack: the buttons are disabled (no double sends)
  root.dataset.busy = String(state.inFlight !== null);
  const table = state.table;
  if (!table) return;
  for (const player of table.players ?? []) if (player.name !== null) state.names.set(player.seat, player);
  // a new match at this table (a rematch): the last match's hand summary and signal are gone
  if (state.shownMatch !== null && table.match !== state.shownMatch) newMatch();
  state.shownMatch = table.match;
  $("table-title").textContent = `Mesa ${VARIANT_NAME[table.variant]} ${table.seats === 2 ? "1x1" : "2x2"} (${KIND_NAME[table.kind] ?? table.kind})`;
  // this variant's rules (in another tab: the table stays open here)
  $("rules-link").href = `/regras#${table.variant}`;
  $("rules-link").textContent = `Regras do ${VARIANT_NAME[table.variant]} (abre em outra aba)`;
  // a player in another tab sees in the tab's title that the table waits for them
  const myTurn = pendingFor(state.seat).length > 0;
  document.title = `${myTurn ? "(Sua vez) " : ""}${$("table-title").textContent} · Barajamos`;
  const over = matchEnded();
  $("resign").hidden = over || table.status !== "playing" || state.seat === null || state.seat === undefined;
  renderSeating(table);
  renderBoard();
  renderFairness();
  renderMatchOver(table);
  const me = state.seat !== null && state.seat !== undefined;
  // a visitor without a seat watches (a full private table opened from its invite link): said,
  // and nothing of a player's is offered (no cards, no entropy phrase)
  const watching = spectatorText(table);
  $("spectator-note").hidden = watching === "";
  setText($("spectator-note"), watching);
  $("my-hand-box").hidden = !me;
  // a page refused the table sends no more entropy (no hand is dealt to it)
  $("entropy-box").hidden = !me || state.refused;
  // ranked and arena tables play one match: their players queue again instead
  const competitive = table.kind === "ranked" || table.kind === "arena";
  const notice = $("notice");
  notice.hidden = over || !(me && state.absent.has(state.seat));
  // "Estou de volta" (the `back` message): shown, and focusable, whenever my seat is absent
  const back = $("back");
  const wasShown = !back.hidden;
  back.hidden = notice.hidden;
  // back: the button goes away, and with it the focus, which goes to the game (my cards)
  if (wasShown && back.hidden && (document.activeElement === back || (state.backSent !== null && focusLost()))) focusGame();
  if (back.hidden) state.backSent = null;
  back.setAttribute("aria-disabled", String(state.backSent !== null));
  // RULES.md, Clocks: the server says its limit (6 at ranked and arena tables, 10 elsewhere) and
  // the streak so far
  const limit = table.abandon_limit;
  const done = me ? state.automatic[state.seat] ?? 0 : 0;
  const loses = table.seats === 4 ? "a sua dupla perde" : "você perde";
  // a live region: written only when its words change (not at every message)
  setText(notice, notice.hidden ? "" : "Seu tempo acabou: você está ausente e suas decisões são automáticas, 2 s cada uma. "
    + "Aperte “Estou de volta” para ter de novo o tempo inteiro do relógio em cada decisão. "
    + (done >= limit - 1
      ? `O relógio já agiu por você ${timesInARow(done)}: no próximo tempo esgotado, ${loses} a partida por abandono.`
      : done > 0
        ? `O relógio já agiu por você ${timesInARow(done)}; se o tempo se esgotar mais ${timesInARow(limit - done)}, ${loses} a partida por abandono.`
        : `Se o relógio agir por você ${timesInARow(limit)}, ${loses} a partida por abandono.`));
  // back (no longer absent), the streak still stands until I act myself: its count stays said
  const streak = $("streak-notice");
  streak.hidden = over || !me || !notice.hidden || done <= 0 || !limit;
  // (at or past the limit, after a lost connection at a private or training table: the next one)
  const more = limit - done <= 1 ? "mais 1 tempo esgotado" : `mais ${limit - done} tempos esgotados`;
  setText(streak, streak.hidden ? "" : `O relógio agiu por você ${timesInARow(done)}: ${more} e ${loses} a partida por abandono. `
    + "Jogue você mesmo para zerar a contagem.");
  renderFirstDeal(table);
  keepAlertsClear();
  const rematch = $("rematch");
  rematch.hidden = competitive || table.status !== "finished" || state.seat === null
    || state.seat === undefined;
  const asked = (table.rematch ?? []).includes(state.seat);
  rematch.disabled = asked || lobbyPending.has("rematch");
  rematch.textContent = asked ? "Revanche pedida: esperando os outros" : "Revanche";
  // who asked so far, for everybody to see (TableJson `rematch`: the seated people's seats; bots agree)
  const people = (table.players ?? []).filter((p) => p.name !== null && !p.bot);
  const askers = people.filter((p) => (table.rematch ?? []).includes(p.seat));
  const rematchStatus = $("rematch-status");
  // a rematch called off by a player leaving the finished table (it reopened for seating)
  const undone = state.rematchUndone?.match === table.match && table.status !== "finished" && table.status !== "playing"
    ? state.rematchUndone.text : null;
  rematchStatus.hidden = competitive || (undone === null && (table.status !== "finished" || askers.length === 0));
  setText(rematchStatus, rematchStatus.hidden ? "" : undone
    ?? `${askers.length} de ${people.length} ${askers.length === 1 ? "pediu" : "pediram"} revanche: ${askers.map((p) => seatName(p.seat)).join(", ")}.`);
  // after the match, a seated player may also just leave (back to the lobby)
  const leave = $("leave-finished");
  leave.hidden = table.status !== "finished" || state.seat === null || state.seat === undefined;
  leave.disabled = lobbyPending.has("leave");
  // the two ways out differ only where the seat matters (a rematch): said there
  $("leave-hint").hidden = leave.hidden || competitive;
}

/**
 * On a phone the error, my absence notice and `Estou de volta` stick to the top of the screen
 * (CSS, `.table-alerts`): what the keyboard focuses is scrolled clear of them (the page's
 * `scroll-padding-top`, from `--alerts-height`). Their height, 0 where they do not stick; a
 * request brought into sight (revealRequest) must be below them too.
 */
function keepAlertsClear() {
  const bar = $("table-alerts");
  const height = getComputedStyle(bar).position === "sticky" ? Math.ceil(bar.getBoundingClientRect().height) : 0;
  const value = `${height}px`;
  if (document.documentElement.style.getPropertyValue("--alerts-height") !== value) {
    document.documentElement.style.setProperty("--alerts-height", value);
  }
  return height;
}

/**
 * Why this page only watches, when it has no seat: "Mesa cheia: você está assistindo." ("" when
 * seated, when the page lost the table, or at a seating table with a free seat to sit at).
 */
function spectatorText(table) {
  if (seated() || state.refused) return "";
  const free = (table.players ?? []).some((p) => p.name === null);
  if (table.status === "open") return free ? "" : "Mesa cheia: você está assistindo. Se um lugar vagar, você pode se sentar.";
  if (!free) return `Mesa cheia: você está assistindo${table.status === "playing" ? " à partida" : ""}.`;
  return table.status === "playing" ? "A partida já começou: você está assistindo." : "Você está assistindo (sem lugar nesta mesa).";
}

/** "1 vez seguida", "8 vezes seguidas". */
function timesInARow(count) {
  return count === 1 ? "1 vez seguida" : `${count} vezes seguidas`;
}

/** Set a node's text only when it differs: a live region announces every write. */
function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

/** A ranked or arena match waits for its players before its first deal (TableJson
 * `first_deal_by_ms`): said, with a countdown, until a hand is committed. */
function renderFirstDeal(table) {
  const node = $("first-deal");
  const by = table.first_deal_by_ms;
  const waiting = by !== null && by !== undefined && table.status === "playing" && !state.handInfo && !state.view;
  node.hidden = !waiting;
  const clock = $("first-deal-clock");
  if (!waiting) {
    delete clock.dataset.deadline;
    return;
  }
  if (clock.dataset.deadline !== String(by)) {
    clock.dataset.deadline = String(by);
    clock.textContent = `${secondsLeft(by)} s`;
  }
}

/** Put the keyboard focus on the game: my cards (a spectator: the turn line). */
function focusGame() {
  const target = seated() ? $("my-hand") : $("turn");
  if ($("board").hidden) {
    $("table-title").focus();
    return;
  }
  // not the browser's own scroll: it leaves cards half under the actions bar stuck to a phone's
  // screen (a tap on a card's middle there called truco) and, from below, put the cards at the
  // top with the score, the vira and the clock above the screen (a phone review)
  target.focus({ preventScroll: true });
  if (seated()) revealCards();
  else target.scrollIntoView({ block: "nearest" });
}

/**
 * What may cover the board on a phone: the actions bar (`bar`, its box, or null when empty;
 * `stuck` when it sticks to the screen's bottom) and, from the top, the alerts stuck there while
 * one shows (`top`: where the screen is clear from, 0 without them).
 */
function screenEdges() {
  const actions = $("actions");
  const bar = actions.childElementCount ? actions.getBoundingClientRect() : null;
  const stuck = bar !== null && getComputedStyle(actions).position === "sticky";
  const top = keepAlertsClear() ? Math.max(0, $("table-alerts").getBoundingClientRect().bottom) : 0;
  return { bar, stuck, top };
}

/**
 * My cards in sight, clear of the actions bar stuck to the bottom of a phone's screen and of
 * the alerts stuck to its top: the whole board from the score down when it fits, else the
 * cards right above the bar.
 */
function revealCards() {
  const hand = $("my-hand");
  if ($("my-hand-box").hidden || !hand.childElementCount) {
    hand.scrollIntoView({ block: "nearest" });
    return;
  }
  const cards = hand.getBoundingClientRect();
  const { bar, stuck, top } = screenEdges();
  const bottom = stuck ? Math.min(window.innerHeight, bar.top) : window.innerHeight;
  if (cards.top >= top && cards.bottom <= bottom) return;
  const lowest = stuck ? cards.bottom + bar.height + 16 : cards.bottom;
  const room = window.innerHeight - top;
  const boardTop = $("board").getBoundingClientRect().top;
  const turnTop = $("turn").getBoundingClientRect().top;
  if (lowest - boardTop <= room) window.scrollBy(0, boardTop - top); // score, vira: all of it
  else if (lowest - turnTop <= room) window.scrollBy(0, turnTop - top); // the turn and its clock
  else window.scrollBy(0, lowest - window.innerHeight); // the cards, right above the bar
}

/** The focus was dropped (on the page's body, or on an element hidden since) or never placed. */
function focusLost() {
  const active = document.activeElement;
  return !active || active === document.body || active === $("table-title") || active.closest("[hidden]") !== null;
}

/** A partner signal belongs to its hand: a new hand (or match) takes it off the screen. */
function clearSignalReceived() {
  const node = $("signal-received");
  node.textContent = "";
  node.dataset.hand = "";
  node.dataset.key = "";
  $("signal-seen").textContent = "";
  $("signal-seen").hidden = true;
  state.signalsSeen = new Set();
}

/** A new match began at this table (a rematch): the previous one's last summary is not this match's. */
function newMatch() {
  state.summaryHand = null;
  state.rematchUndone = null;
  $("summary").hidden = true;
  $("summary").dataset.hand = "";
  $("summary-body").replaceChildren();
  clearSignalReceived();
}

function renderMatchOver(table) {
  let over = state.matchOver && state.matchOver.match === table.match ? state.matchOver : null;
  if (!over && (table.status === "finished" || table.status === "closed")) {
    // a snapshot after the end (a reload): the view's outcome says how it ended
    const outcome = state.view?.outcome;
    over = outcome
      ? { winner: outcome.winner, termination: outcome.termination, score: state.view.score,
          forfeit_team: outcome.termination === "abandonment" && outcome.winner !== null ? 1 - outcome.winner : null,
          forfeit_seat: table.forfeit_seat ?? null, forfeit_trigger: table.forfeit_trigger ?? null }
      : { winner: null, termination: "closed", score: table.score };
  }
  const appears = Boolean(over) && $("match-over").hidden;
  const goes = !over && !$("match-over").hidden;
  $("match-over").hidden = !over;
  if (over) showMatchOver(over);
  // the end of the match: the focus goes to its box (its heading), which comes first in the page
  if (appears) $("match-over-title").focus();
  // and when the box goes (a rematch began, whoever asked last), the focus it held would drop
  // to the page's body while the new match's clock runs: it goes to the game
  if (goes) {
    state.focusGame = true;
    queueMicrotask(() => { if (focusLost()) focusGame(); });
  }
  // ranked and arena tables play one match: the way on is the queue or the arena
  $("back-ranked").hidden = !over || table.kind !== "ranked";
  $("back-arena").hidden = !over || table.kind !== "arena";
  if (over && table.kind === "arena" && seated()) followArena();
  $("see-standing").hidden = !over || table.kind !== "ranked";
  if (!over || table.kind !== "ranked" || !seated()) $("match-over-standing").hidden = true;
  else showStanding(table.match);
}

// An arena pairs its entrants again as soon as their table ends, and the next table's clocks run
// from its first deal: a player still reading this table's end would abandon the next one
// unseen. So the finished arena table follows the player there, as the arena page does.
const ARENA_POLL_MS = 2000;
let arenaFollowed = false;

function followArena() {
  if (arenaFollowed) return;
  arenaFollowed = true;
  const poll = async () => {
    let data;
    try {
      data = await api("GET", "/api/ranked/arenas");
    } catch (err) {
      if (err.status !== 401) setTimeout(poll, 2 * ARENA_POLL_MS);
      return;
    }
    const next = data.arenas.find((a) => a.table && a.table !== tableId)?.table ?? null;
    if (next) {
      openTable(next, $("arena-next"), "Sua próxima partida da arena começou: o relógio da mesa está correndo.");
      return;
    }
    // still an entrant of an arena that pairs: the next table may come
    if (data.arenas.some((a) => a.joined && a.state !== "closed")) setTimeout(poll, ARENA_POLL_MS);
  };
  poll();
}

function renderSeating(table) {
  const seated = state.seat !== null && state.seat !== undefined;
  $("seating").hidden = table.status !== "open";
  const list = $("seat-list");
  list.replaceChildren(...table.players.map((p) => {
    const label = p.name === null ? "livre" : `${playerName(p)}${p.seat === state.seat ? " (você)" : ""}`;
    let button = null;
    if (p.name === null && table.status === "open") {
      button = el("button", {
        type: "button", dataset: { seat: p.seat }, disabled: lobbyPending.has("seat") || lobbyPending.has("join"),
        onclick: () => (seated ? lobby("seat", { seat: p.seat }) : lobby("join", invite ? { seat: p.seat, invite } : { seat: p.seat })),
      }, seated ? `Mudar para o lugar ${p.seat + 1}` : `Sentar no lugar ${p.seat + 1}`);
    }
    // 1x1 has no teams: only 2x2 seats say their dupla, and a free one whose partner it makes
    // (a guest sat down as their friend's opponent, meaning to play with them)
    const partner = table.players.find((q) => q.seat === (p.seat + 2) % 4);
    const partnerSaid = table.seats !== 4 || p.name !== null || !partner || partner.name === null ? ""
      : partner.seat === state.seat ? ", seu parceiro" : `, parceiro de ${playerName(partner)}`;
    const team = table.seats === 4 ? ` (dupla ${p.seat % 2 === 0 ? "A" : "B"}${partnerSaid})` : "";
    return el("li", {}, `Lugar ${p.seat + 1}${team}: ${label}${p.name !== null && !p.bot && !p.connected ? " — desconectado" : ""} `, button);
  }));
  // a private table starts with every seat taken (the server refuses it otherwise); at a
  // training table the bots take the free seats
  const missing = table.kind === "training" ? 0 : table.players.filter((p) => p.name === null).length;
  const start = $("start-match");
  start.hidden = !seated || table.status !== "open" || missing > 0;
  const waiting = $("start-missing");
  waiting.hidden = !seated || table.status !== "open" || missing === 0;
  setText(waiting, waiting.hidden ? "" : `${missing === 1 ? "Falta 1 jogador" : `Faltam ${missing} jogadores`} para começar a partida${table.invite ? ": compartilhe o convite." : "."}`);
  start.disabled = lobbyPending.has("start");
  start.textContent = table.kind === "training" ? "Começar contra os robôs" : "Começar a partida";
  const inviteBox = $("invite-box");
  inviteBox.hidden = !table.invite;
  if (table.invite) $("invite-link").value = `${window.location.origin}/t/${table.id}?invite=${table.invite}`;
  $("leave-table").hidden = !seated;
  $("leave-table").disabled = lobbyPending.has("leave");
}

function renderBoard() {
  const view = state.view;
  const board = $("board");
  board.hidden = !view;
  if (!view) return;
  // the board's first showing (a match start, or the first snapshot with a view): a keyboard or
  // screen reader player starts at the game, not at the top of the page
  const firstShown = state.focusGame;
  state.focusGame = false;
  if (firstShown && focusLost()) queueMicrotask(() => { if (focusLost()) focusGame(); });
  const hand = view.hand;
  const v = view.variant;
  // score
  const score = view.score;
  const arg = v === "argentino";
  // my side first when I sit at the table (as every score in words); spectators: team order
  const first = seated() ? teamOf(state.seat) : 0;
  const side = (team) => el("span", { class: "team", dataset: { team } }, `${teamShort(team)}: `,
    el("strong", { id: `score-${team}` }, String(score[team])), arg ? ` (${malasBuenas(score[team])})` : "");
  $("scoreboard").replaceChildren(side(first), side(1 - first), el("span", { class: "muted" }, ` até ${view.target}`));
  // hand info
  const info = [];
  if (hand) {
    // while the team at onze / dez decides, the hand is worth what playing it makes it (not 1)
    const deciding = hand.request?.kind === "special" && !hand.result;
    info.push(el("span", {}, "Vale ", el("strong", { id: "hand-value" }, String(deciding ? hand.request.value : hand.value)),
      deciding ? " se for jogada" : ""));
    if (hand.kind === "onze" && hand.special_name) info.push(el("span", { class: "badge" }, hand.special_name));
    if (hand.kind === "ferro") info.push(el("span", { class: "badge" }, "mão de ferro"));
    if (hand.vira) info.push(el("span", { class: "vira" }, "Vira: ", cardFace(hand.vira, v)));
    if (hand.manilhas?.length) info.push(el("span", { class: "manilhas" }, "Manilhas: ", hand.manilhas.map((c) => cardFace(c, v))));
  }
  $("hand-info").replaceChildren(...info);
  renderPlayers(view);
  renderTurn(view);
  renderRequest(view);
  renderRounds(view);
  renderHands(view);
  renderActions(view);
  renderSignals();
  revealRequest(view);
  revealMyTurn(view);
}

/**
 * My turn to play a card beginning with my cards out of sight (off the screen, or under the
 * actions bar stuck to a phone's screen: a phone review found the clock or the cards off the
 * screen at most of its decisions): brought into sight, once a turn, as `revealCards` does. The
 * focus stays where it is; nothing moves while the player types in a field or answers a
 * request (`revealRequest`).
 */
function revealMyTurn(view) {
  const mine = !view.hand?.request && pendingFor(state.seat).some((p) => p.kind === "play");
  const key = mine && !view.hand.result && !matchEnded()
    ? JSON.stringify([state.viewHand, view.hand.rounds?.length ?? 0]) : null;
  if (key === state.turnRevealed) return;
  state.turnRevealed = key;
  if (key === null) return;
  const active = document.activeElement;
  if (active && (active.tagName === "INPUT" || active.tagName === "TEXTAREA" || active.tagName === "SELECT")) return;
  revealCards();
}

/**
 * A request my seat must answer, arriving off screen (on a phone the board is taller than the
 * screen, and the player may be reading the log) or with my cards under the actions bar (on a
 * narrow screen it sticks to the bottom of the screen): brought into sight, once, with its
 * buttons below it and my cards above them: the whole board from the score down when it fits,
 * else the request down to my cards, else the request alone. The focus stays where it is;
 * nothing moves while the player types in a field.
 */
function revealRequest(view) {
  const request = view.hand?.request;
  const mine = pendingFor(state.seat).some((p) => p.kind === "answer");
  const key = request && mine && !view.hand.result && !matchEnded()
    ? JSON.stringify([state.viewHand, request.kind, request.seat, request.value ?? null, request.chain ?? null])
    : null;
  if (key === state.revealed) return;
  state.revealed = key;
  if (key === null) return;
  const active = document.activeElement;
  if (active && (active.tagName === "INPUT" || active.tagName === "TEXTAREA" || active.tagName === "SELECT")) return;
  const box = $("request").getBoundingClientRect();
  const { bar, stuck, top } = screenEdges();
  // my cards: a truco is answered on them (a spectator, or a seat gone al mazo, holds none)
  const cards = $("my-hand-box").hidden || !$("my-hand").childElementCount ? null : $("my-hand").getBoundingClientRect();
  // the bar follows the request and the cards in the page; stuck to the screen's bottom, it
  // may cover them
  const bottom = bar ? Math.min(window.innerHeight, bar.top) : window.innerHeight;
  const seen = (r) => r.top >= top && r.bottom <= bottom;
  // (on a wide screen the bar is not stuck: it must be in sight too)
  if (seen(box) && (!cards || seen(cards)) && (!bar || bar.bottom <= window.innerHeight)) return;
  // the lowest thing to see: the bar where it stands in the page, right below my cards, when
  // it sticks to the screen (scrolled to there, it covers nothing)
  const last = Math.max(box.bottom, cards?.bottom ?? 0);
  const lowest = stuck ? last + bar.height + 16 : Math.max(last, bar?.bottom ?? 0);
  const boardTop = $("board").getBoundingClientRect().top;
  const room = window.innerHeight - top;
  if (lowest - boardTop <= room) window.scrollBy(0, boardTop - top); // the whole board: score, vira too
  else if (lowest - box.top <= room) window.scrollBy(0, lowest - window.innerHeight); // request to cards
  else $("request").scrollIntoView({ block: "center" });
}

/**
 * Rebuild `node` only when what it shows changed: a keyboard player's focus stays on a button
 * while other players' moves arrive. When the focus was inside and the rebuild takes its button
 * away (my own move changes what I may do), it goes to the same button again if it is still
 * there, else to the cards group (`Suas cartas`), where it also goes from the `Ações` group when
 * that group is rebuilt: never by itself onto a raise, accept, decline or card button, and never
 * back to the page's start.
 */
function rebuild(node, key, build) {
  if (node.dataset.key === key) return;
  node.dataset.key = key;
  const focused = node.contains(document.activeElement) ? document.activeElement : null;
  // the button the player put the focus on: its data and its words (a raise to another stake,
  // or the same card code in another hand's deal, is another button)
  const same = focused && focused !== node ? { data: { ...focused.dataset }, text: focused.textContent } : null;
  node.replaceChildren(...build());
  if (!focused) return;
  const cards = $("my-hand");
  if (focused === node) {
    // the focus sat on the group itself (its button went away earlier): the cards group
    if (node !== cards) cards.focus();
    return;
  }
  const match = [...node.querySelectorAll("button")].find((b) => !b.disabled && b.textContent === same.text
    && Object.keys(same.data).length && Object.entries(same.data).every(([k, v]) => b.dataset[k] === v));
  // never by itself onto another button: the next Enter would raise the stake, accept,
  // decline or play a card the player never chose
  (match ?? cards).focus();
}

/**
 * While an action waits for its answer, the buttons are marked busy (`aria-disabled`, and a
 * click does nothing) instead of `disabled`, which would throw the keyboard focus to the page.
 */
function markBusy(node) {
  const busy = state.inFlight !== null;
  for (const button of node.querySelectorAll("button")) {
    if (busy) button.setAttribute("aria-disabled", "true");
    else button.removeAttribute("aria-disabled");
  }
}

function pendingFor(seat) {
  // a team vote's clock runs for both partners (`seats`): each may still change their vote
  return state.pending.filter((p) => (p.seats ?? [p.seat]).includes(seat));
}

function renderPlayers(view) {
  const hand = view.hand;
  $("players").replaceChildren(...Array.from({ length: view.seats }, (_, seat) => {
    const player = hand?.players?.[seat];
    const pend = pendingFor(seat);
    const table = state.table?.players?.[seat];
    const notes = [];
    if (hand && hand.dealer === seat) notes.push("dá as cartas");
    if (hand && hand.mano === seat) notes.push("mão");
    if (player && !player.in_hand) notes.push("foi al mazo");
    const count = state.automatic[seat] ?? 0;
    const limit = state.table?.abandon_limit;
    // past the limit only while the seat was empty at a private or training table: there the
    // empty seat cancels the match, and the next automatic action once back forfeits it
    const tally = count >= limit ? `${count} ações automáticas seguidas, além do limite de ${limit}`
      : `${count} de ${limit} ações automáticas`;
    if (state.absent.has(seat)) {
      notes.push(count && limit ? `ausente (${tally})` : "ausente");
    } else if (count > 0 && limit) {
      // back, but the streak stands until the player acts themselves
      notes.push(count >= limit ? tally : `${tally} seguidas`);
    }
    let cancelling = false;
    if (table && !table.bot && table.name !== null && !table.connected) {
      // a private or training match is cancelled when the seat stays empty (TableJson `cancel_at_ms`)
      const due = table.cancel_at_ms;
      cancelling = Number.isInteger(due) && !matchEnded();
      notes.push(cancelling
        ? ["desconectado — a partida é cancelada em ", el("span", { class: "clock cancel-clock", dataset: { deadline: due } }, `${secondsLeft(due)} s`), " se não voltar"]
        : "desconectado");
    }
    const clock = pend.length ? el("span", { class: "clock", dataset: { deadline: pend[0].deadline_ms } }, `${secondsLeft(pend[0].deadline_ms)} s`) : null;
    // the turn's clock is labelled beside the cancellation's: after "cancelada em 46 s se não
    // voltar" a bare "· 11 s" read as part of that sentence (a review). Alone on its line it is
    // the line's only clock, and a label there wrapped a phone's player lines, pushing the score
    // out of sight while a truco waited for an answer
    const clockLabel = !cancelling ? "" : pend[0]?.kind === "answer" ? "vez de responder: " : "vez de jogar: ";
    return el("li", { class: `player${pend.length ? " acting" : ""}${seat === state.seat ? " me" : ""}`, dataset: { seat } },
      el("strong", {}, seatName(seat)),
      player ? ` · ${cardsText(player)}` : "",
      notes.length ? el("span", { class: "muted" }, " · ", notes.flatMap((note, i) => (i ? [", ", note] : [note])).flat()) : "",
      clock ? el("span", { class: "turn-clock" }, " · ", clockLabel, clock) : "");
  }));
}

/** A seat's cards on its player line: none once it went to the mazo (its cards were dropped). */
function cardsText(player) {
  const count = player.in_hand === false ? 0 : player.cards_left;
  if (!count) return "sem cartas";
  return count === 1 ? "1 carta" : `${count} cartas`;
}

/** A ticking countdown: hidden from screen readers (a live region would read every second);
 * its thresholds are announced instead (`#clock-alert`, see the ticker). */
function clockSpan(id, deadline) {
  return el("span", { id, class: "clock", "aria-hidden": "true", dataset: { deadline } }, `${secondsLeft(deadline)} s`);
}

/** The words of `parts` with each clock as its deadline, not its seconds: what changes the text. */
function contentKey(parts) {
  return parts.flat().map((part) => {
    if (!(part instanceof Node)) return String(part ?? "");
    const copy = part.cloneNode(true);
    const clocks = copy.matches?.(".clock") ? [copy] : [...(copy.querySelectorAll?.(".clock") ?? [])];
    for (const clock of clocks) clock.textContent = `[${clock.dataset.deadline}]`;
    return copy.textContent;
  }).join("\n");
}

/** Write a live region only when what it says changed: a screen reader reads every write. */
function setLive(node, ...parts) {
  const key = contentKey(parts);
  if (node.dataset.key === key) return;
  node.dataset.key = key;
  node.replaceChildren(...parts.flat());
}

function renderTurn(view) {
  const hand = view.hand;
  const node = $("turn");
  if (state.refused) {
    // this page lost the table (the notice says why): it knows no turn or clock any more
    setLive(node, "Sem acesso à mesa nesta página.");
    return;
  }
  if (matchEnded()) {
    // no turn and no clock once the match is over, even in a hand it cut off
    setLive(node, "Partida encerrada.");
    return;
  }
  if (!hand || hand.result) {
    setLive(node, hand?.result ? "Mão encerrada. A próxima começa em instantes." : "");
    return;
  }
  const mine = pendingFor(state.seat);
  if (mine.length && mine[0].team_vote) {
    // both partners voted, differently: each may still change their vote until the clock ends;
    // a disconnected partner's vote counts as decline (RULES.md): nobody to agree with but them
    if (partnerAway()) {
      const arg = variant() === "argentino";
      setLive(node, `${seatName((state.seat + 2) % 4)} está desconectado e o voto dele conta como ${arg ? "no quiero" : "correr"}: `
        + `se ele não voltar e votar como você, a dupla ${arg ? "diz no quiero" : "corre"} em `, clockSpan("my-clock", mine[0].deadline_ms));
    } else {
      setLive(node, "A sua dupla discorda: combinem o voto — ", clockSpan("my-clock", mine[0].deadline_ms));
    }
  } else if (mine.length) {
    setLive(node, "Sua vez — ", clockSpan("my-clock", mine[0].deadline_ms));
  } else if (hand.turn !== null && hand.turn !== undefined) {
    setLive(node, `Vez de ${seatName(hand.turn)}.`);
  } else if (hand.request) {
    setLive(node, `Esperando a resposta ${teamOfWords(hand.request.answering_team)}.`);
  } else {
    setLive(node, "");
  }
}

function renderRequest(view) {
  const hand = view.hand;
  const box = $("request");
  const request = hand?.request;
  // a request the end of the match cut off waits for nothing
  if (!request || hand.result) {
    box.hidden = true;
    setLive($("request-ask"));
    setLive($("request-votes"));
    return;
  }
  const parts = [];
  // a call made as the team's answer is the team's: "Nossa dupla pediu retruco!", as the log
  // says (the view's `seat` is the partner whose vote completed it)
  const caller = request.in_answer ? teamName(request.team) : seatName(request.seat);
  if (request.kind === "truco") {
    parts.push(el("p", { class: "ask" }, `${caller} pediu ${request.name}! Se for aceito, a mão passa a valer ${request.value}.`));
  } else if (request.kind === "envido") {
    const chain = request.chain ?? "";
    const now = chain.length > 1 ? ` (${envidoChain(chain)})` : "";
    parts.push(el("p", { class: "ask" }, `${caller} cantou ${envidoChain(chain.slice(-1))}${now}${request.truco_waiting ? "; o truco espera a resposta do envido" : ""}.`));
    // what answering is worth now, as the engine counts it (the view's request carries it)
    const quiero = chain.includes("F")
      ? `a falta envido, ${pointsText(request.accepted_points)} para o melhor tanto (se quem ganhar estiver na frente no placar, ganha a partida)`
      : `${pointsText(request.accepted_points)} para o melhor tanto`;
    parts.push(el("p", { id: "envido-worth" }, `Quiero: ${quiero}. No quiero: ${pointsText(request.declined_points)} para ${teamMid(request.team)}.`));
  } else {
    // RULES.md: running gives the other side 1 point (mão de onze) or 2 (Mineiro's mão de dez)
    const run = SPECIAL_RUN_POINTS[view.variant ?? variant()];
    const gives = run ? `; se correr, ${teamMid(1 - request.answering_team)} marca ${pointsText(run)}` : "";
    parts.push(el("p", { class: "ask" }, `${capitalized(request.name)}: ${teamMid(request.answering_team)} decide se joga (vale ${request.value}) ou corre${gives}.`));
  }
  const votes = Object.entries(hand.votes ?? {});
  const voted = [];
  if (votes.length && view.seats === 4) {
    const teamVote = state.pending.find((p) => p.team_vote);
    // the team deciding: mine says "a dupla", the others are named (their votes may be hidden)
    const team = request.answering_team;
    const who = seated() && team === teamOf(state.seat) ? "a dupla" : teamMid(team);
    voted.push(el("p", { id: "votes", class: "votes" }, firstAnswer() ? "Respostas: " : "Votos: ",
      votes.map(([s, vote]) => {
        const verb = voteName(vote, hand);
        return verb ? `${seatName(Number(s))}: ${verb}` : `${seatName(Number(s))} ${voteVerb()}`;
      }).join("; "),
      // a live countdown: the 250 ms ticker updates every `.clock`
      teamVote ? [` — ${who} discorda: `, clockSpan("vote-clock", teamVote.deadline_ms), " para combinar"] : ""));
  }
  // rebuilt on every message, but written only when it says something new ("pediu truco!" once;
  // a vote re-reads the votes alone: the question is a region of its own)
  setLive($("request-ask"), ...parts);
  setLive($("request-votes"), ...voted);
  box.hidden = false;
}

function renderRounds(view) {
  const hand = view.hand;
  const v = view.variant;
  const list = $("rounds");
  if (!hand) {
    list.replaceChildren();
    return;
  }
  const items = playedRounds(hand, v);
  const previous = previousRound(hand);
  if (previous) items.unshift(previous);
  if (hand.table.length || !hand.result) {
    items.push(roundItem(hand.round, [`${hand.round + 1}ª rodada (na mesa)`], hand.table, v, "round current"));
  }
  list.replaceChildren(...items);
}

/**
 * The hand before's last round, on the board while the next hand has no card on the table yet:
 * the next hand is dealt a moment after the last card, and the summary that keeps it is below
 * the board (out of sight on a phone: a player's review saw the deciding round vanish).
 */
function previousRound(hand) {
  const last = state.lastBoard;
  if (!last || hand.result || hand.rounds.length || hand.table.length) return null;
  if (last.number === null || last.number === state.viewHand || last.match !== (state.table?.match ?? null)) return null;
  const ended = last.hand;
  const lead = `Mão ${last.number} — `;
  if (ended.table.length) {  // cut short (a request declined, the mazo)
    return roundItem(ended.round, [`${lead}${ended.round + 1}ª rodada: não terminou`], ended.table, last.v, "round previous");
  }
  const index = ended.rounds.length - 1;
  if (index < 0) return null;
  return roundItem(index, [`${lead}${index + 1}ª rodada: `, roundWinner(ended.rounds[index])], ended.rounds[index].plays,
    last.v, "round previous");
}

/** Who took a finished round, or that it tied. */
function roundWinner(round) {
  return el("strong", {}, round.tied ? "empate" : `${seatName(round.winner_seat)} ganhou`);
}

/** A round's line: its title, then its cards with who played each. */
function roundItem(index, title, plays, v, className = "round") {
  return el("li", { class: className, dataset: { round: index } },
    el("span", { class: "round-title" }, ...title), el("span", { class: "plays" }, plays.map((p) => playFace(p, v))));
}

/** A hand's finished rounds, each with its cards and who won it (the board, the hand's summary). */
function playedRounds(hand, v) {
  return hand.rounds.map((r, i) => roundItem(i, [`${i + 1}ª rodada: `, roundWinner(r)], r.plays, v));
}

function playFace(play, v) {
  const label = play.covered && !play.card ? `${seatName(play.seat)}: carta coberta` : undefined;
  return el("span", { class: "play" }, el("small", {}, seatName(play.seat)),
    cardFace(play.card, v, { label }), play.covered && play.card ? el("small", {}, "(coberta)") : "");
}

function renderHands(view) {
  const hand = view.hand;
  const v = view.variant;
  const me = hand?.players?.[state.seat];
  const legal = state.refused ? [] : view.legal ?? [];
  const plays = legal.filter((a) => a.do === "play");
  const blind = hand?.kind === "ferro";
  // gone to the mazo: my cards were dropped, they are not shown as if still mine
  const folded = Boolean(me) && me.in_hand === false;
  $("folded-note").hidden = !folded;
  const held = folded ? [] : me?.hand ?? [];
  // the hand (or the match) is over: the cards left are shown, not offered ("Jogar ..." to no end);
  // a mão de ferro's card nobody saw stays face down, and "Escolha uma posição" is said no more
  const over = Boolean(hand?.result) || Boolean(view.outcome);
  $("blind-note").hidden = !blind || folded || over;
  rebuild($("my-hand"), JSON.stringify([held, plays, blind, over]), () => held.map((slot) => {
    if (over) {
      return el("span", { class: "slot left-over" },
        cardFace(slot.card ?? null, v, slot.card ? {} : { label: "carta não jogada, virada" }));
    }
    if (blind) {
      const action = plays.find((a) => a.position === slot.position);
      return el("button", {
        type: "button", class: "card-button", disabled: !action,
        "aria-label": `Jogar a carta virada da posição ${slot.position + 1}`, dataset: { position: slot.position, action: "play" },
        onclick: (event) => act(action, event),
      }, cardFace(null, v, { label: `posição ${slot.position + 1}` }), el("small", {}, `posição ${slot.position + 1}`));
    }
    const open = plays.find((a) => a.card === slot.card && !a.covered);
    const covered = plays.find((a) => a.card === slot.card && a.covered);
    return el("span", { class: "slot" },
      el("button", {
        type: "button", class: "card-button", disabled: !open,
        "aria-label": `Jogar ${cardName(slot.card, v)}`, dataset: { card: slot.card, action: "play" },
        onclick: (event) => act(open, event),
      }, cardFace(slot.card, v)),
      covered ? el("button", {
        type: "button", class: "cover", dataset: { card: slot.card, action: "cover" },
        "aria-label": `Cobrir ${cardName(slot.card, v)} (jogar virada, não vale nada)`, "aria-describedby": "cover-note",
        onclick: (event) => act(covered, event),
      }, "Cobrir") : null);
  }));
  // a card covered now is shown in the hand's public record afterwards: said while one can be
  $("cover-note").hidden = over || blind || !plays.some((a) => a.covered);
  markBusy($("my-hand"));
  // the team at onze / dez sees the partner's cards: the view shows them only then
  const partnerSeat = state.seat !== null && state.seat !== undefined && view.seats === 4 ? (state.seat + 2) % 4 : null;
  const partner = partnerSeat === null ? null : hand?.players?.[partnerSeat];
  const faces = (partner?.hand ?? []).filter((slot) => slot.card);
  $("partner-box").hidden = faces.length === 0 || Boolean(hand?.result);
  $("partner-cards").replaceChildren(...faces.map((slot) => cardFace(slot.card, v)));
}

/**
 * My vote on the request my team is answering (2x2, table mode `vote`), or null: once cast, the
 * answers left in `view.legal` are the other votes, each one a change of mine.
 */
function myVote(view) {
  const hand = view.hand;
  if (view.seats !== 4 || !seated() || !hand?.request || hand.result) return null;
  return hand.votes?.[state.seat] ?? null;
}

function renderActions(view) {
  const hand = view.hand;
  const others = (state.refused ? [] : view.legal ?? []).filter((a) => a.do !== "play");
  // after my vote the buttons left are the other answers: a lone "Correr da mão de dez" read as
  // the team's answer, and a stray tap on it changed the vote; so each says it changes my vote
  // (its name too), and my vote stands next to them (a review: a team ran that way)
  const mine = others.length ? myVote(view) : null;
  const labels = others.map((action) => {
    const label = actionLabel(action, hand);
    return mine ? `Mudar meu voto: ${label.charAt(0).toLowerCase()}${label.slice(1)}` : label;
  });
  const current = mine ? `Seu voto: ${voteName(mine, hand)}. Os botões abaixo mudam o seu voto.` : "";
  rebuild($("actions"), JSON.stringify([others, labels, current]), () => [
    ...(mine ? [el("p", { id: "my-vote", class: "my-vote" }, current)] : []),
    ...others.map((action, i) => el("button", {
      type: "button", class: action.do === "decline" || action.do === "fold" ? "secondary" : "",
      dataset: { action: action.do },
      "aria-describedby": mine ? "my-vote" : undefined,
      onclick: (event) => act(action, event),
    }, labels[i]))]);
  markBusy($("actions"));
}

function renderSignals() {
  // a server bot partner ignores signals: nothing to offer then
  const partner = partnerOf();
  const show = state.view?.seats === 4 && seated() && state.signals.length > 0 && !state.refused
    && !partner?.bot && Boolean(state.view?.hand) && !state.view.hand.result;
  $("signals-box").hidden = !show;
  if (!show) return;
  if ($("signals").children.length === state.signals.length) return;
  $("signals").replaceChildren(...state.signals.map((s) => el("button", {
    type: "button", class: "secondary", dataset: { signal: s.code },
    onclick: () => {
      // a double click sends it once: the same signal waiting for its ack is not sent again
      if ([...state.signalsSent.values()].includes(s.label)) return;
      const id = `s${state.nextId++}`;
      // said sent once the server acks it (it reaches the partner only: nothing else shows it)
      if (send({ type: "signal", id, code: s.code })) state.signalsSent.set(id, s.label);
      else showError(OFFLINE);
    },
  }, s.label)));
}

function renderFairness() {
  const info = state.handInfo;
  if (!info) return;
  $("fair-hand").textContent = String(info.hand);
  $("fair-commitment").textContent = info.commitment;
  const seated = state.seat !== null && state.seat !== undefined;
  $("fair-mine").textContent = myContribution(tableId, info.hand)
    ?? (seated ? "(nenhuma guardada neste navegador)" : "(nenhuma: você está assistindo)");
  const mineState = myContribution(tableId, info.hand) ? contributionState(tableId, info.hand) : null;
  $("fair-mine-note").textContent = { sent: "(enviada, esperando confirmação)", received: "(recebida pela mesa)",
    late: "(não chegou a tempo: a mão foi distribuída sem ela)" }[mineState] ?? "";
  const from = info.entropy_from ?? [];
  $("fair-from").textContent = from.length ? from.map((s) => seatName(s)).join(", ") : "ninguém ainda";
  for (const [id, check] of [["fair-chain", state.chainCheck], ["fair-last", state.lastCheck]]) {
    const node = $(id);
    node.dataset.state = check?.state ?? "unknown";
    node.textContent = check ? `${check.state === "ok" ? "✓ " : check.state === "fail" ? "✗ " : ""}${check.text}` : "—";
  }
  const last = [...state.records.keys()].sort((a, b) => b - a)[0];
  if (last !== undefined) {
    $("fair-record").replaceChildren(el("a", { href: `/h/${tableId}/${last}`, id: "last-record" }, `Conferir a mão ${last} no navegador`));
  }
}

// the thresholds of my clock said aloud (the clocks themselves are hidden from screen readers)
const CLOCK_MARKS = [10, 5];

// countdowns tick between server messages: a clock's text is written only when its number changes
setInterval(() => {
  for (const node of document.querySelectorAll(".clock[data-deadline]")) {
    const text = `${secondsLeft(Number(node.dataset.deadline))} s`;
    if (node.textContent !== text) node.textContent = text;
  }
  announceClock();
}, 250);

/** Say "10 segundos", then "5 segundos", once each, as my pending decision's clock runs down
 * (a clock that starts at or below a mark does not say it). */
function announceClock() {
  const clock = $("my-clock");
  if (!clock) return;
  const deadline = Number(clock.dataset.deadline);
  const left = secondsLeft(deadline);
  if (state.clockMarks?.deadline !== deadline) state.clockMarks = { deadline, first: left, said: new Set() };
  const marks = state.clockMarks;
  const due = CLOCK_MARKS.filter((mark) => left <= mark && left > 0 && mark < marks.first && !marks.said.has(mark));
  if (!due.length) return;
  for (const mark of due) marks.said.add(mark);
  $("clock-alert").textContent = `${Math.min(...due)} segundos`;
}

$("start-match").addEventListener("click", async () => {
  // the seating box hides: the focus would drop to the page's body; the game takes it
  state.focusGame = true;
  if (await lobby("start") && focusLost()) focusGame();
});
$("back").addEventListener("click", () => {
  if (state.backSent !== null) return;
  const id = `b${state.nextId++}`;
  if (send({ type: "back", id })) {
    state.backSent = id;
    state.errorMarks.set(id, errorMark());
    render();
  } else {
    showError(OFFLINE);
  }
});
/** What resigning costs, said before it is confirmed (docs/RANKED.md: a lost match, its stake
 * and rating; the abandonment record and its pauses). */
function resignWarning(table) {
  const four = table.seats === 4;
  let text = `Sair agora é desistir: ${four ? "a sua dupla perde" : "você perde"} a partida.`;
  if (table.kind === "ranked") {
    const stake = Number(root.dataset.rankedStake);
    const chips = stake > 0 ? `as ${stake} fichas apostadas` : "as fichas apostadas";
    text += ` Numa mesa ranqueada ela conta como derrota: você perde ${chips} e pontos na classificação${four ? " (seu parceiro também)" : ""}.`;
  } else if (table.kind === "arena") {
    text += " Na arena ela conta como derrota (nenhum ponto; sua sequência de vitórias acaba) e você só volta a ser pareado quando entrar na arena de novo.";
  }
  if (table.kind === "ranked" || table.kind === "arena") {
    text += " E fica um registro de abandono: a partir do 2º em 7 dias, você fica suspenso da fila ranqueada e da arena (15 min, depois 30 min, 1 h…, até 24 h).";
  }
  return `${text} Sair mesmo?`;
}

$("resign").addEventListener("click", async () => {
  // docs/PROTOCOL.md: leaving during a match is resigning, so ask first
  const table = state.table;
  if (!table || !window.confirm(resignWarning(table))) return;
  // the lobby says the match was given up (and, after a ranked or arena match, where to go on)
  const competitive = table.kind === "ranked" || table.kind === "arena";
  if (await lobby("leave", { resign: true })) window.location.assign(`/?left=${competitive ? table.kind : "1"}`);
});
$("rematch").addEventListener("click", () => lobby("rematch"));
// leaving a table with no match in play: should a start or a rematch begin one meanwhile, the
// server refuses (`match_in_play`) rather than take this click for resigning it
$("leave-table").addEventListener("click", async () => {
  if (await lobby("leave", { resign: false })) window.location.assign("/");
});
$("leave-finished").addEventListener("click", async () => {
  // after a ranked or arena match the way on is the queue or the arena, not the lobby
  const back = { ranked: "/ranked", arena: "/arena" }[state.table?.kind] ?? "/";
  if (await lobby("leave", { resign: false })) window.location.assign(back);
});

rememberOpenedTable(tableId);
restoreLog();
connect();
