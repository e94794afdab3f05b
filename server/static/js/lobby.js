// The lobby: create a table, list the tables I sit at and the ones with a free seat, join one.
// Private tables are never listed (GET /api/tables leaves them out): they are joined through
// their invite link, /t/{id}?invite=CODE, on the table page.

import { api, el, KIND_NAME, playerName, scorePoints, STATUS_NAME, VARIANT_NAME } from "./common.js";

const REFRESH_MS = 4000;
const form = document.getElementById("new-table");
const formError = document.getElementById("new-table-error");
const status = document.getElementById("lobby-status");
const openList = document.getElementById("lobby-tables");
const mineList = document.getElementById("my-tables");

// the dupla's answers are a 2x2 setting: hidden while 1x1 is chosen (without script it shows,
// and a 1x1 table ignores it)
const seatsField = document.getElementById("new-seats");
const modeField = document.getElementById("new-mode")?.parentElement;
function showMode() {
  if (modeField && seatsField) modeField.hidden = seatsField.value !== "4";
}
seatsField?.addEventListener("change", showMode);
showMode();

function who(table) {
  return table.players.map((p) => (p.name === null ? "lugar livre" : playerName(p))).join(", ");
}

function describe(table) {
  const seats = table.seats === 2 ? "1x1" : "2x2";
  return `${VARIANT_NAME[table.variant] ?? table.variant} ${seats} · ${KIND_NAME[table.kind] ?? table.kind} · ${STATUS_NAME[table.status] ?? table.status}`;
}

function showError(node, message) {
  node.textContent = message;
  node.hidden = false;
}

async function join(table, seat) {
  const { table: joined } = await api("POST", `/api/tables/${table.id}/join`, { seat });
  window.location.assign(`/t/${joined.id}`);
}

/** A 2x2 seat's dupla, and the partner it gives when one sits there: "dupla B, parceiro de caio". */
function teamWith(table, seat) {
  const team = `dupla ${seat % 2 === 0 ? "A" : "B"}`;
  const partner = table.players.find((p) => p.seat === (seat + 2) % 4);
  return partner && partner.name !== null ? `${team}, parceiro de ${playerName(partner)}` : team;
}

function openTableItem(table) {
  const error = el("p", { class: "error", role: "alert", hidden: true });
  const buttons = table.players.filter((p) => p.name === null).map((p) =>
    el("button", {
      type: "button",
      dataset: { seat: p.seat },
      onclick: async (event) => {
        const button = event.currentTarget;
        if (button.disabled) return;
        error.hidden = true;
        button.disabled = true; // one join at a time
        try {
          await join(table, p.seat);
        } catch (err) {
          showError(error, err.message);
          button.disabled = false;
        }
      },
    // 1x1 has no teams: only 2x2 seats say their dupla, and whose partner they make me (a new
    // player sat down as their friend's opponent, meaning to play with them)
    }, `Sentar no lugar ${p.seat + 1}${table.seats === 4 ? ` (${teamWith(table, p.seat)})` : ""}`));
  return el("li", { class: "table-item", dataset: { table: table.id } },
    el("p", {}, el("strong", {}, describe(table)), " — dono: ", table.owner ?? "?"),
    el("p", { class: "muted" }, "Na mesa: ", who(table)),
    el("div", { class: "buttons" }, buttons), error);
}

/** The score as the table page says it, my side first: "Você 14 x 6 eva1" (1x1), "Nós 3 x 5
 * Eles" (2x2); team 0 first only when I have no seat there. */
function scoreText(table) {
  const mine = Number.isInteger(table.you) ? table.you % 2 : null;
  const first = mine ?? 0;
  const side = (team) => {
    if (table.seats === 2) {
      const player = table.players.find((p) => p.seat === team);
      return team === mine ? "Você" : playerName(player ?? { seat: team, name: null });
    }
    if (mine === null) return `Dupla ${team === 0 ? "A" : "B"}`;
    return team === mine ? "Nós" : "Eles";
  };
  const points = (team) => scorePoints(table.score[team], table.variant);
  return `${side(first)} ${points(first)} x ${points(1 - first)} ${side(1 - first)}`;
}

function myTableItem(table) {
  return el("li", { class: "table-item", dataset: { table: table.id } },
    el("p", {}, el("a", { href: `/t/${table.id}` }, `Mesa ${table.id}`), " — ", describe(table)),
    el("p", { class: "muted" }, "Na mesa: ", who(table), ` · placar: ${scoreText(table)}`),
    awayNote(table));
}

/**
 * A match in play whose page I left (another link, Back, a closed tab): what my empty seat costs,
 * said where I went. A new player left a training match for the lobby, saw it go on without a
 * word, and found it cancelled a minute later.
 */
function awayNote(table) {
  const text = awayText(table);
  if (text === null) return "";
  return el("p", { class: "notice away" }, el("span", { class: "away-text" }, text),
    el("a", { href: `/t/${table.id}` }, "Voltar à mesa"));
}

/** The words of `awayNote`, or null when my seat there is not empty in a match in play. */
function awayText(table) {
  const me = table.players.find((p) => p.seat === table.you);
  if (table.status !== "playing" || !me || me.connected) return null;
  if (me.cancel_at_ms) {
    const seconds = Math.max(0, Math.round((me.cancel_at_ms - Date.now()) / 1000));
    return `Você saiu desta mesa com a partida em jogo: se não voltar em ${seconds} s, a partida é cancelada (sem pontos). `;
  }
  return `Você saiu desta mesa com a partida em jogo: o relógio joga por você, e ${table.abandon_limit} jogadas automáticas seguidas contam como abandono (a partida perdida). `;
}

/** A list holding the keyboard focus (or a pressed join) is left alone until the next refresh. */
function busy(list) {
  return list.contains(document.activeElement) || list.querySelector("button:disabled") !== null;
}

let refreshing = false;
let nextRefresh = null;

/**
 * Both lists, then the next refresh REFRESH_MS after this one ends: a slow answer is not asked
 * for again while it is on its way. A tab the player is not looking at does not ask at all; it
 * refreshes as soon as it is shown again.
 */
async function refresh() {
  clearTimeout(nextRefresh);
  nextRefresh = null;
  if (refreshing || document.hidden) return;
  refreshing = true;
  try {
    await loadLists();
  } finally {
    refreshing = false;
    nextRefresh = setTimeout(refresh, REFRESH_MS);
  }
}

document.addEventListener("visibilitychange", () => {
  if (!document.hidden) refresh();
});
// a lobby brought back by the browser's Back button (from its back/forward cache) showed the
// lists it had when it was left, "Você não está em nenhuma mesa." for a match just started,
// until its next refresh: it refreshes at once
window.addEventListener("pageshow", (event) => {
  if (event.persisted) refresh();
});

/** The status line (a live region, read aloud at every write): written only when it changes,
 * not at every refresh of the lists. */
function say(text) {
  if (status.textContent !== text) status.textContent = text;
}

async function loadLists() {
  try {
    const [open, mine] = await Promise.all([api("GET", "/api/tables"), api("GET", "/api/tables?mine=1")]);
    const myIds = new Set(mine.tables.map((t) => t.id));
    // no focus stealing: a list is not rebuilt under the player's focus
    if (!busy(mineList)) {
      mineList.replaceChildren(...mine.tables.map(myTableItem));
      if (mine.tables.length === 0) mineList.replaceChildren(el("li", { class: "muted" }, "Você não está em nenhuma mesa."));
    } else {
      // the list keeps the focus, but what leaving a match costs stays true: its words are
      // updated in place (its link, maybe focused, stays). A keyboard user on "Voltar à mesa"
      // read "60 s" for a minute after the match was cancelled (an accessibility review)
      for (const note of mineList.querySelectorAll("p.away")) {
        const table = mine.tables.find((t) => t.id === note.closest("li")?.dataset.table);
        const text = note.querySelector(".away-text");
        const fresh = table ? awayText(table) ?? "" : "Esta partida foi encerrada (cancelada ou terminada). ";
        if (text && text.textContent !== fresh) text.textContent = fresh;
      }
    }
    const others = open.tables.filter((t) => !myIds.has(t.id));
    if (!busy(openList)) openList.replaceChildren(...others.map(openTableItem));
    say(others.length === 0 ? "Nenhuma mesa esperando jogadores agora: crie uma!"
      : `${others.length} ${others.length === 1 ? "mesa" : "mesas"} com lugar livre.`);
  } catch (err) {
    say(`Não foi possível carregar as mesas: ${err.message}`);
  }
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  formError.hidden = true;
  const data = new FormData(form);
  const button = document.getElementById("create-table");
  button.disabled = true;
  try {
    const { table } = await api("POST", "/api/tables", {
      variant: data.get("variant"), seats: Number(data.get("seats")), mode: data.get("mode"), kind: data.get("kind"),
    });
    window.location.assign(`/t/${table.id}`);
  } catch (err) {
    showError(formError, err.message);
    button.disabled = false;
  }
});
document.getElementById("create-table").disabled = false; // the form is handled from here on

/** Sent here by resigning a match (`?left=1`, `ranked`, `arena`): say so, and where to go on. */
function leftNotice() {
  const left = new URLSearchParams(window.location.search).get("left");
  if (!left) return;
  const links = {
    ranked: [["/ranked", "Voltar à fila ranqueada"], ["/me", "Ver pontos e fichas"]],
    arena: [["/arena", "Voltar à arena"]],
  }[left] ?? [];
  const parts = ["Você saiu da mesa; a partida foi dada como perdida."];
  for (const [href, text] of links) parts.push(" ", el("a", { href }, text));
  document.querySelector("main h1")?.before(el("p", { id: "left-notice", class: "notice", role: "status" }, ...parts));
}

leftNotice();
refresh();
