// The hand page: fetch a signed hand record and check it here, with fairness.js (no server help).

import {
  cardFace, contributionState, el, explainLateContribution, fetchHouseKeys, houseKeyOptions, myContribution, playedHands,
  VARIANT_NAME,
} from "./common.js";
import { verifyHandRecord } from "./fairness.js";

const root = document.getElementById("hand-root");
const tableId = root.dataset.tableId;
const handNumber = root.dataset.hand;
const $ = (id) => document.getElementById(id);

const CHECK_NAMES = {
  structure: "estrutura", source: "mão pedida", key: "chave", signature: "assinatura", commitment: "compromisso",
  deck: "baralho", dealer: "quem dá", deal: "distribuição", replay: "jogadas", mine: "minha entropia",
};
const STATUS_WORDS = { pass: "ok", fail: "FALHOU", warn: "aviso", skip: "na linha de comando" };
let houseKeys = null; // the house's current key and the older ones handed over to it (/api/key)
let downloadUrl = null;

function setVerdict(stateName, text) {
  const node = $("verdict");
  node.dataset.state = stateName;
  node.textContent = text;
}

function renderChecks(checks) {
  $("checks").replaceChildren(...checks.map((c) => el("li", { class: `check ${c.status}`, dataset: { check: c.name, status: c.status } },
    el("strong", {}, `${CHECK_NAMES[c.name] ?? c.name} (${c.name}): ${STATUS_WORDS[c.status] ?? c.status}`),
    " — ", c.detail)));
}

function renderDetails(result, text, mine, recordUrl) {
  const r = result.record;
  const v = r.variant;
  $("rec-commitment").textContent = r.commitment;
  $("rec-seed").textContent = r.seed;
  $("rec-variant").textContent = `${VARIANT_NAME[v] ?? v}, ${r.seats} lugares, mesa ${r.table}, mão ${r.hand}`;
  $("rec-dealer").textContent = `lugar ${r.dealer.seat + 1} (${r.dealer.by === "draw" ? "sorteado" : "rodízio"})`;
  $("rec-score").textContent = `${r.score_before[0]} x ${r.score_before[1]} → ${r.score_after[0]} x ${r.score_after[1]}${r.match_winner === null ? "" : ` (partida ganha pela dupla ${r.match_winner === 0 ? "A" : "B"})`}`;
  $("rec-key").textContent = `${r.key_id} · ${r.public_key}`;
  // the record cannot tell a bot (bots send no entropy) from an absent player; this browser
  // knows the bots of the hands it played (table.js keeps them), else both are said possible
  const bots = playedHands().find((h) => h.table === r.table && String(h.hand) === String(r.hand))?.bots;
  const missing = (seat) => {
    if (!Array.isArray(bots)) return "não enviou (ausente, ou um robô: robôs não enviam entropia)";
    return bots.includes(seat) ? "robô: não envia entropia" : "não enviou (ausente)";
  };
  $("rec-contributions").replaceChildren(...r.contributions.map((c, seat) => {
    const isMine = mine !== null && c === mine;
    return el("li", { class: isMine ? "mine" : "", dataset: { seat } },
      `Lugar ${seat + 1}: `, c === null ? el("em", {}, missing(seat)) : el("code", { class: "hex" }, c),
      isMine ? el("strong", { class: "mine-tag" }, " ← a minha") : "");
  }));
  $("rec-deck").replaceChildren(...result.deck.map((card, i) => el("li", { dataset: { index: i } }, cardFace(card, v))));
  const deal = result.deal;
  const rows = deal.hands.map((cards, seat) => el("p", { class: "deal-row" }, `Lugar ${seat + 1}: `, cards.map((c) => cardFace(c, v))));
  if (deal.vira) rows.push(el("p", { class: "deal-row" }, "Vira: ", cardFace(deal.vira, v)));
  $("rec-deal").replaceChildren(...rows);
  const source = recordUrl ? `${window.location.origin}${recordUrl}` : `${r.table}-${r.hand}.json`;
  // pin the house's published keys (the current one and every older one handed over to it),
  // never the record's own (a forged record carries its forger's)
  $("cli-command").textContent = houseKeys
    ? `barajamos-verify hand ${source} ${houseKeyOptions(houseKeys)}`
    : `barajamos-verify hand ${source}   # sem --key: fixe a chave publicada pela casa`;
  if (downloadUrl) URL.revokeObjectURL(downloadUrl);
  downloadUrl = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  const link = $("download");
  link.href = downloadUrl;
  link.download = `${r.table}-${r.hand}.json`;
  $("details").hidden = false;
}

async function check(text, { pinned, mine, recordUrl, expected = null, late = null }) {
  setVerdict("pending", "Conferindo…");
  let result;
  try {
    result = await verifyHandRecord(text, { pinnedKeys: pinned, refusedKeys: houseKeys?.refused ?? [], mine, expected });
  } catch (err) {
    setVerdict("fail", `Não foi possível conferir: ${err.message}`);
    return;
  }
  // my stored contribution that never reached the table in time (table.js noted it) is no failure
  const checks = late ? explainLateContribution(result, "late", late.seat) : result.checks;
  renderChecks(checks);
  if (!result.readable) {
    $("details").hidden = true;
    setVerdict("unreadable", `Registro ilegível: ${result.error}`);
    return;
  }
  renderDetails(result, text, mine, recordUrl);
  const failed = checks.filter((c) => c.status === "fail");
  const wrongHand = failed.find((c) => c.name === "source");
  if (wrongHand) {
    // a genuine record, maybe, but of another hand: it says nothing about the one asked for
    setVerdict("fail", `FALHOU: o servidor respondeu com o registro de outra mão (${wrongHand.detail}). Ele não prova nada sobre a mão pedida.`);
  } else if (failed.length) {
    setVerdict("fail", `FALHOU: ${failed.map((c) => CHECK_NAMES[c.name] ?? c.name).join(", ")}. Este registro não é o que a casa assinou, ou o baralho não saiu da semente comprometida.`);
  } else {
    const unsigned = checks.some((c) => c.name === "signature" && c.status === "skip");
    // signed by an older key whose hand-over this browser could not check (no Ed25519)
    const handedOver = pinned?.find((k) => k.public_key === result.record.public_key && k.verified === false);
    setVerdict("ok", "Verificado: a semente confere com o compromisso, e o baralho e a distribuição saem dela e das contribuições dos jogadores."
      + (unsigned ? " A assinatura não pôde ser conferida neste navegador: use a linha de comando abaixo." : "")
      + (handedOver ? " A passagem da chave anterior da casa à atual também não: quem a confere é a verificação da cadeia da mesa pela linha de comando (barajamos-verify chain)." : ""));
  }
}

async function loadHand() {
  const id = `${tableId}-${handNumber}`;
  const url = `/hands/${id}`;
  let response;
  try {
    response = await fetch(url, { headers: { Accept: "application/json" } });
  } catch {
    setVerdict("unreadable", "Sem conexão com o servidor.");
    return;
  }
  if (!response.ok) {
    setVerdict("unreadable", response.status === 404 ? "Mão não encontrada, ou ainda em jogo (o registro só sai no fim da mão)." : `O servidor respondeu ${response.status}.`);
    return;
  }
  const text = await response.text();
  const mine = myContribution(tableId, handNumber);
  if (mine) $("mine-hex").value = mine;
  const played = playedHands().find((h) => h.table === tableId && String(h.hand) === String(handNumber));
  const late = contributionState(tableId, handNumber) === "late" && Number.isInteger(played?.seat)
    ? { seat: played.seat } : null;
  // the record must be the hand of this page's address, not whatever hand the server sent
  const expected = { table: tableId, hand: Number(handNumber) };
  await check(text, { pinned: houseKeys?.keys ?? null, mine, recordUrl: url, expected, late });
}

$("record-file").addEventListener("change", async () => {
  const file = $("record-file").files[0];
  if (file) $("record-text").value = await file.text();
});

$("paste-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = $("record-text").value;
  if (!text.trim()) {
    setVerdict("unreadable", "Cole o JSON de um registro ou escolha um arquivo.");
    return;
  }
  const key = $("pinned-key").value.trim();
  if (key && !/^[0-9a-f]{64}$/.test(key)) {
    setVerdict("unreadable", "A chave pública são 64 dígitos hexadecimais minúsculos.");
    return;
  }
  const mine = $("mine-hex").value.trim() || null;
  // a key typed here is pinned alone; else the house's keys
  await check(text, { pinned: key ? [key] : houseKeys?.keys ?? null, mine, recordUrl: null });
});

houseKeys = await fetchHouseKeys();
if (tableId && handNumber) await loadHand();
