// My past hands: the tables I sit at (lobby API) and the hands this browser played (kept
// locally with my entropy), each with its public signed record.

import { api, el, fetchHouseKeys, houseKeyOptions, myContribution, playedHands, VARIANT_NAME } from "./common.js";

const MAX_TABLES = 30;
const status = document.getElementById("hands-status");
const list = document.getElementById("hands-list");

async function chain(tableId) {
  const response = await fetch(`/tables/${tableId}/chain`, { headers: { Accept: "application/json" } });
  if (!response.ok) return [];
  const entries = await response.json();
  return Array.isArray(entries) ? entries.filter((e) => e && e.kind === "hand") : [];
}

function handRow(record) {
  const mine = myContribution(record.table, record.hand);
  const end = record.end === "completed" ? "" : ` (${record.end === "abandonment" ? "abandono" : "cancelada"})`;
  return el("li", { dataset: { table: record.table, hand: record.hand } },
    el("a", { href: `/h/${record.table}/${record.hand}` }, `Mão ${record.hand}`),
    ` — ${record.score_before[0]} x ${record.score_before[1]} → ${record.score_after[0]} x ${record.score_after[1]}${end}`,
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

function matchTitle(hands, number) {
  const last = hands[hands.length - 1];
  const final = `${last.score_after[0]} x ${last.score_after[1]}`;
  const how = last.end === "abandonment" ? `terminada por abandono, ${final}`
    : last.end === "cancelled" ? "cancelada"
      : last.match_winner !== null && last.match_winner !== undefined ? `terminada em ${final}` : "em andamento";
  return `Partida ${number} (${how})`;
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
  return before && /^[0-9]{1,18}-[0-9a-f]{16}$/.test(before) ? before : null;
}

async function load() {
  const houseKeys = await fetchHouseKeys();
  const asked = askedTable();
  const before = askedPage();
  let playedTables = [];
  let older = null;
  if (!asked) {
    try {
      // every table I played a match at, closed ones too, from any browser (newest first)
      const page = await api("GET", `/api/me/tables${before ? `?before=${before}` : ""}`);
      playedTables = page.tables.map((t) => t.id);
      older = page.next;
    } catch (err) {
      status.textContent = `Não foi possível carregar suas mesas: ${err.message}`;
    }
  }
  // the first page also has the tables whose hands this browser kept (with my entropy)
  const local = before ? [] : playedHands().map((h) => h.table);
  const ids = asked ? [asked] : [...new Set([...playedTables, ...local])].slice(0, MAX_TABLES);
  if (ids.length === 0) {
    status.textContent = "Nenhuma mão ainda: jogue uma partida e ela aparece aqui.";
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
      matches(records).map((hands, i) => [hands, i + 1]).reverse().map(([hands, number]) => [
        el("h3", { class: "match-title" }, matchTitle(hands, number)),
        el("ul", { class: "hand-list" }, hands.slice().reverse().map(handRow))]).flat()));
  }
  list.replaceChildren(...sections);
  status.textContent = total ? `${total} ${total === 1 ? "mão" : "mãos"} com registro público${asked ? ` da mesa ${asked}` : ""}.`
    : asked ? `Nenhuma mão terminada na mesa ${asked}.` : "Nenhuma mão terminada ainda.";
  if (older) {
    list.append(el("p", {}, el("a", { href: `/me/hands?before=${older}` }, "Mesas mais antigas")));
  }
  if (asked) {
    // one table only (a ranked match's link): said so, with the way back to all of them
    status.append(" ", el("a", { href: "/me/hands" }, "Ver as mãos de todas as suas mesas"));
  }
}

load();
