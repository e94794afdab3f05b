// My past hands: the tables I sit at (lobby API) and the hands this browser played (kept
// locally with my entropy), each with its public signed record.

import { api, apiMessage, el, fetchHouseKeys, houseKeyOptions, myContribution, playedHand, playedHands, playerName, scorePoints, VARIANT_NAME } from "./common.js";

const MAX_TABLES = 30;
const status = document.getElementById("hands-status");
const list = document.getElementById("hands-list");

// Who sat where in each match at the tables this page lists, from the server (`data-matches`:
// {table: [{number, seat (mine, null when I was not seated), names (seat order, null for a
// bot), first_hand, last_hand}]}); a record names no player, and scores are kept in seat order
const MATCHES = (() => {
  try {
    const data = JSON.parse(list.dataset.matches ?? "{}");
    return data !== null && typeof data === "object" ? data : {};
  } catch {
    return {};
  }
})();

/** Who played `record`'s match and where I sat, or null when nobody can say: the server's
 * seats, else the seat this browser kept when it played the hand. */
function sidesOf(record) {
  const match = (MATCHES[record.table] ?? []).find((m) => m.first_hand <= record.hand && record.hand <= m.last_hand);
  const kept = playedHand(record.table, record.hand);
  const seat = Number.isInteger(match?.seat) ? match.seat : Number.isInteger(kept?.seat) ? kept.seat : null;
  const names = Array.isArray(match?.names) && match.names.length === record.seats ? match.names : null;
  if (seat === null && names === null) return null;
  return { seat, names };
}

/** A seat's player, as the table page names them: "Você", a name, "Robô 2" for a bot. */
function seatLabel(sides, seat) {
  if (seat === sides.seat) return "Você";
  if (!sides.names) return null;
  return playerName({ seat, name: sides.names[seat], bot: sides.names[seat] === null });
}

/** The team whose score comes first: mine when I played, else team 0 (the table page's order). */
function firstTeam(sides) {
  return sides?.seat === null || sides?.seat === undefined ? 0 : sides.seat % 2;
}

/** The two sides, mine first: "Você x eva1", "Você e ana x bia e Robô 4" (names unknown: "Você x
 * adversário", "Nós x Eles"). */
function sidesText(sides, seats) {
  const first = firstTeam(sides);
  const team = (t) => {
    const labels = Array.from({ length: seats }, (_, s) => s).filter((s) => s % 2 === t).map((s) => seatLabel(sides, s));
    if (labels.some((label) => label === null)) {
      if (seats === 2) return t === first ? "Você" : "adversário";
      return t === first ? "Nós" : "Eles";
    }
    // my partner after me; a side without me in the table's seat order
    labels.sort((a, b) => (b === "Você") - (a === "Você"));
    return labels.join(" e ");
  };
  return `${team(first)} x ${team(1 - first)}`;
}

/** A score, my side first when I played there (seat order otherwise); Argentino's in malas and
 * buenas, as the table page says it. */
function score(pair, sides, variant) {
  const first = firstTeam(sides);
  return `${scorePoints(pair[first], variant)} x ${scorePoints(pair[1 - first], variant)}`;
}

async function chain(tableId) {
  const response = await fetch(`/tables/${tableId}/chain`, { headers: { Accept: "application/json" } });
  if (!response.ok) return [];
  const entries = await response.json();
  return Array.isArray(entries) ? entries.filter((e) => e && e.kind === "hand") : [];
}

function handRow(record, sides) {
  const mine = myContribution(record.table, record.hand);
  const end = record.end === "completed" ? "" : ` (${record.end === "abandonment" ? "abandono" : "cancelada"})`;
  return el("li", { dataset: { table: record.table, hand: record.hand } },
    el("a", { href: `/h/${record.table}/${record.hand}` }, `Mão ${record.hand}`),
    ` — ${score(record.score_before, sides, record.variant)} → ${score(record.score_after, sides, record.variant)}${end}`,
    mine ? el("span", { class: "badge" }, "minha entropia guardada") : "");
}

/** A table's hands (oldest first) split into its matches: a match ends with the hand that has a
 * winner, or that its abandonment or cancellation cut short. */
function matches(records) {
  const out = [];
  let current = [];
  for (const record of records) {
    current.push(record);
    if (record.match_winner !== null && record.match_winner !== undefined || record.end !== "completed") {
      out.push(current);
      current = [];
    }
  }
  if (current.length) out.push(current);
  return out;
}

/** "Partida 1 — Você x eva1 (terminada em 14 x 6: você venceu)": the sides named, mine first
 * (as the table page says a score); without knowing who played, the seats' order, unnamed. */
function matchTitle(hands, number, sides) {
  const last = hands[hands.length - 1];
  const final = score(last.score_after, sides, last.variant);
  const winner = last.match_winner;
  const mine = sides?.seat === null || sides?.seat === undefined ? null : sides.seat % 2;
  const result = winner === null || winner === undefined || mine === null ? ""
    : `: ${last.seats === 4 ? "a sua dupla" : "você"} ${winner === mine ? "venceu" : "perdeu"}`;
  const how = last.end === "abandonment" ? `terminada por abandono, ${final}${result}`
    : last.end === "cancelled" ? "cancelada"
      : winner !== null && winner !== undefined ? `terminada em ${final}${result}` : "em andamento";
  return sides ? `Partida ${number} — ${sidesText(sides, last.seats)} (${how})` : `Partida ${number} (${how})`;
}

/** The offline command for a table's chain, pinned to the house's published keys, the current
 * one and every older one handed over to it (never the key the records carry: a forged chain
 * carries its forger's), as the hand page's command is. */
function chainCommand(id, houseKeys) {
  const command = `barajamos-verify chain ${window.location.origin}/tables/${id}/chain`;
  return houseKeys ? `${command} ${houseKeyOptions(houseKeys)}` : `${command}   # sem --key: fixe a chave publicada pela casa`;
}

/** `?table=<16 hex>`: that table's hands only (the ranked pages link a finished match here). */
function askedTable() {
  const asked = new URLSearchParams(window.location.search).get("table");
  return asked && /^[0-9a-f]{16}$/.test(asked) ? asked : null;
}

/** `?before=<cursor>`: an older page of the tables I played at (the API's `next`). */
function askedPage() {
  const before = new URLSearchParams(window.location.search).get("before");
  // the API's form (server/live/api.py PLAYED_CURSOR); anything else is said, not sent
  return before && /^(0|[1-9][0-9]{0,17})-[0-9a-f]{16}$/.test(before) ? before : null;
}

async function load() {
  const houseKeys = await fetchHouseKeys();
  const asked = askedTable();
  const before = askedPage();
  const first = () => el("a", { href: "/me/hands" }, "Ir para a primeira página");
  if (!asked && before === null && new URLSearchParams(window.location.search).has("before")) {
    status.replaceChildren(`${apiMessage("bad_cursor")} `, first());
    return;
  }
  let playedTables = [];
  let older = null;
  // a failure is said and stays said: never "no hands" to a player whose list did not load
  let failed = null;
  if (!asked) {
    try {
      // every table I played a match at, closed ones too, from any browser (newest first)
      const page = await api("GET", `/api/me/tables${before ? `?before=${before}` : ""}`);
      playedTables = page.tables.map((t) => t.id);
      older = page.next;
    } catch (err) {
      failed = `Não foi possível carregar suas mesas: ${err.message}`;
      status.textContent = failed;
    }
  }
  // the first page also has the tables whose hands this browser kept (with my entropy)
  const local = before ? [] : playedHands().map((h) => h.table);
  const ids = asked ? [asked] : [...new Set([...playedTables, ...local])].slice(0, MAX_TABLES);
  if (ids.length === 0) {
    if (failed === null) status.textContent = "Nenhuma mão ainda: jogue uma partida e ela aparece aqui.";
    else if (before) status.append(" ", first());
    return;
  }
  const sections = [];
  let total = 0;
  for (const id of ids) {
    const records = await chain(id);
    if (!records.length) continue;
    total += records.length;
    const first = records[0];
    sections.push(el("section", { class: "card-box", dataset: { table: id } },
      el("h2", {}, `Mesa ${id} — ${VARIANT_NAME[first.variant] ?? first.variant} ${first.seats === 2 ? "1x1" : "2x2"}`),
      el("p", {}, el("a", { href: `/tables/${id}/chain`, download: `${id}-chain.json` }, "Baixar a cadeia inteira"),
        " · offline: ", el("code", { class: "cli-command" }, chainCommand(id, houseKeys))),
      // newest match first, each match's hands newest first, unnumbered: list numbers would
      // fight the hand numbers ("1. Mão 5")
      matches(records).map((hands, i) => [hands, i + 1]).reverse().map(([hands, number]) => {
        // who played the match: its last hand's seats (a match is played in the same seats)
        const sides = sidesOf(hands[hands.length - 1]);
        return [
          el("h3", { class: "match-title" }, matchTitle(hands, number, sides)),
          el("ul", { class: "hand-list" }, hands.slice().reverse().map((record) => handRow(record, sides)))];
      }).flat()));
  }
  list.replaceChildren(...sections);
  status.textContent = total ? `${total} ${total === 1 ? "mão" : "mãos"} com registro público${asked ? ` da mesa ${asked}` : ""}.`
    : asked ? `Nenhuma mão terminada na mesa ${asked}.` : "Nenhuma mão terminada ainda.";
  // the hands this browser kept are listed, but the house's list of my tables did not load
  if (failed !== null) status.textContent = `${failed} Abaixo, só as mesas que este navegador guardou.`;
  if (older) {
    list.append(el("p", {}, el("a", { href: `/me/hands?before=${older}` }, "Mesas mais antigas")));
  }
  if (asked) {
    // one table only (a ranked match's link): said so, with the way back to all of them
    status.append(" ", el("a", { href: "/me/hands" }, "Ver as mãos de todas as suas mesas"));
  }
}

load();
