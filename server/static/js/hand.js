// The hand page: fetch a signed hand record and check it here, with fairness.js (no server help).

import {
  cardFace, contributionState, el, explainLateContribution, fetchHouseKeys, houseKeyOptions, myContribution, playedHand,
  scorePoints, seenCommitment, teamLetter, teamSeats, VARIANT_NAME,
} from "./common.js";
import { commitmentSeenCheck, seedChainCheck, UnreadableError, verifyHandRecord } from "./fairness.js";
import { handMoves, RULES, specialHandOf } from "./moves.js";

const root = document.getElementById("hand-root");
const tableId = root.dataset.tableId;
const handNumber = root.dataset.hand;
// the seat the signed-in player had in this page's hand, as the server knows it (the browser that
// played the hand knows it too; any other browser of the player knew nothing of it)
const serverSeat = root.dataset.mySeat === "" || root.dataset.mySeat === undefined ? null : Number(root.dataset.mySeat);

/** This browser's entry of a hand it played, else, for this page's own hand, my seat in it. */
function playedHere(table, hand) {
  const kept = playedHand(table, hand);
  if (kept || serverSeat === null || table !== tableId || String(hand) !== String(handNumber)) return kept;
  return { seat: serverSeat };
}
const $ = (id) => document.getElementById(id);
// the house's table ids (docs/PROTOCOL.md): only such a table's chain is asked of this server
const HOUSE_TABLE = /^[0-9a-f]{16}$/;

const CHECK_NAMES = {
  structure: "estrutura", source: "mão pedida", key: "chave", signature: "assinatura", commitment: "compromisso",
  seen: "compromisso visto na mesa", "seed-chain": "cadeia de sementes",
  deck: "baralho", dealer: "quem dá", deal: "distribuição", replay: "jogadas", mine: "minha entropia",
};
const STATUS_WORDS = { pass: "ok", fail: "FALHOU", warn: "aviso", skip: "não conferido aqui (confira na linha de comando)" };
// what a failed check means, in the headline (the list below gives the exact reason)
const FAILURE_MEANING = {
  signature: "A assinatura não confere: o registro foi alterado depois de assinado.",
  commitment: "A semente revelada não confere com o compromisso.",
  seen: "O compromisso do registro não é o que a mesa mostrou a este navegador antes da mão: a semente foi trocada depois.",
  "seed-chain": "A semente não confere com a cadeia de sementes que a casa assinou antes da mão: ela pode ter sido escolhida depois da entropia dos jogadores.",
  deck: "O baralho não sai da semente e das contribuições.",
  dealer: "Quem dá não é o que a semente sorteia.",
  deal: "A distribuição não é a do baralho.",
  mine: "A minha contribuição não está no registro.",
};
let houseKeys = null; // the house's current key and the older ones handed over to it (/api/key)
let downloadUrl = null;
const chains = new Map(); // table id -> promise of its chain's entries (null: not fetched)

function setVerdict(stateName, text) {
  const node = $("verdict");
  node.dataset.state = stateName;
  node.textContent = text;
}

/** The table's chain as the house serves it (its signed seed anchors are what is used), once. */
function tableChain(id) {
  if (!chains.has(id)) {
    chains.set(id, (async () => {
      try {
        const response = await fetch(`/tables/${id}/chain`, { headers: { Accept: "application/json" } });
        if (!response.ok) return null;
        const entries = await response.json();
        return Array.isArray(entries) ? entries : null;
      } catch {
        return null;
      }
    })());
  }
  return chains.get(id);
}

function renderChecks(checks) {
  $("checks").replaceChildren(...checks.map((c) => el("li", { class: `check ${c.status}`, dataset: { check: c.name, status: c.status } },
    el("strong", {}, `${CHECK_NAMES[c.name] ?? c.name} (${c.name}): ${STATUS_WORDS[c.status] ?? c.status}`),
    " — ", c.detail)));
}

/** A word for a POSIX shell: as is when it is plain, else in single quotes. */
function shellWord(text) {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`;
}

/** `--mine-text=<phrase>` when my contribution is a typed phrase (readable UTF-8), else `--mine <hex>`. */
function mineOption(hex) {
  if (!/^(?:[0-9a-f]{2})+$/.test(hex)) return `--mine ${shellWord(hex)}`;
  let text = null;
  try {
    const bytes = Uint8Array.from(hex.match(/../g), (b) => parseInt(b, 16));
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
    // the phrase must give back exactly these bytes, and be something a person typed
    if (/[\u0000-\u001f\u007f-\u009f]/.test(text) || new TextEncoder().encode(text).length !== bytes.length) text = null;
  } catch {
    text = null;
  }
  // `=`: a phrase starting with "-" is still the option's value
  return text === null ? `--mine ${hex}` : `--mine-text=${shellWord(text)}`;
}

/** What the page says about the commitment's being fixed before the hand. */
function renderCommitmentWhen(checks) {
  const node = $("rec-commitment-when");
  const seen = checks.find((c) => c.name === "seen");
  const chain = checks.find((c) => c.name === "seed-chain");
  const failed = [seen, chain].find((c) => c?.status === "fail");
  const passed = [seen, chain].filter((c) => c?.status === "pass");
  if (failed) {
    node.dataset.state = "fail";
    node.textContent = `NÃO: ${failed.detail}`;
  } else if (passed.length) {
    node.dataset.state = "ok";
    node.textContent = `conferido: ${passed.map((c) => c.detail).join("; ")}`;
  } else {
    node.dataset.state = "unknown";
    node.textContent = `não conferido: ${chain?.detail ?? "a cadeia de sementes da mesa não foi consultada"}`;
  }
}

/** The record's two sides, which it names by seat only (it names no player): my side first when
 * this browser played the hand (its seat kept by table.js), as /me/hands and the table page say a
 * score, else team 0 first. `label`: "Lugar 1", "Você (lugar 2)"; 2x2 "Dupla B (lugares 2 e 4)",
 * "Sua dupla (A: lugares 1 e 3)"; `by` and `of` the same side in the middle of a sentence. */
function recordSides(r, mySeat) {
  const mine = Number.isInteger(mySeat) && mySeat >= 0 && mySeat < r.seats ? mySeat % 2 : null;
  const seats = (team) => teamSeats(team, r.seats);
  if (r.seats === 4) {
    return {
      first: mine ?? 0,
      label: (team) => (team === mine
        ? `Sua dupla (${teamLetter(team)}: ${seats(team)})` : `Dupla ${teamLetter(team)} (${seats(team)})`),
      by: (team) => (team === mine ? "pela sua dupla" : `pela dupla ${teamLetter(team)}`),
      of: (team) => (team === mine ? "da sua dupla" : `da dupla ${teamLetter(team)}`),
    };
  }
  return {
    first: mine ?? 0,
    label: (team) => (team === mine ? `Você (${seats(team)})` : `Lugar ${team + 1}`),
    by: (team) => (team === mine ? "por você" : `pelo lugar ${team + 1}`),
    of: (team) => (team === mine ? "seu" : `do lugar ${team + 1}`),
  };
}

/** Who did a move, as the moves say it: "Lugar 2" / "lugar 2", "Você" / "você" for the seat this
 * browser played; a 2x2 team "Dupla B" / "dupla B", "Sua dupla" / "sua dupla" (1x1: the seat). */
function moveNames(r, mySeat) {
  const mine = (seat) => Number.isInteger(mySeat) && seat === mySeat;
  const myTeam = (team) => Number.isInteger(mySeat) && mySeat % 2 === team;
  const seat = (s) => (mine(s) ? el("strong", { class: "mine" }, "Você") : `Lugar ${s + 1}`);
  const seatMid = (s) => (mine(s) ? "você" : `lugar ${s + 1}`);
  if (r.seats === 2) return { seat, seatMid, team: seat, teamMid: seatMid };
  return {
    seat, seatMid,
    team: (t) => (myTeam(t) ? el("strong", { class: "mine" }, "Sua dupla") : `Dupla ${teamLetter(t)}`),
    teamMid: (t) => (myTeam(t) ? "sua dupla" : `dupla ${teamLetter(t)}`),
  };
}

/** The hand as it was played: its moves by round (moves.js), the seat that played it here marked.
 * A record whose actions the rules refuse (the CLI's `replay` says which) is listed as written. */
function renderMoves(r, mySeat) {
  const v = r.variant;
  // said only where a card was played covered (never in Argentino, nor in most hands)
  $("moves-covered").hidden = !r.actions.some((a) => a.covered);
  const names = moveNames(r, mySeat);
  let rounds;
  try {
    rounds = handMoves(r, names);
  } catch (err) {
    $("rec-moves").replaceChildren(
      el("p", { class: "moves-note" }, `As jogadas não seguem as regras (${err.message}): abaixo, como o registro as escreve.`),
      el("ol", { class: "moves", "aria-labelledby": "moves-title" }, r.actions.map((a, index) => el("li", { dataset: { action: index, seat: a.seat } },
        `Lugar ${a.seat + 1}: ${a.do}${a.card ? ` ${a.card}` : ""}${a.covered ? " (coberta)" : ""}${a.position !== undefined ? ` (posição ${a.position})` : ""}`))));
    return;
  }
  if (!rounds.length) {
    $("rec-moves").replaceChildren(el("p", { class: "moves-note" }, "Nenhuma jogada: a mão terminou antes da primeira."));
    return;
  }
  $("rec-moves").replaceChildren(...rounds.flatMap(({ round, moves }) => [
    el("h4", { id: `moves-round-${round}` }, `Rodada ${round}`),
    el("ol", { class: "moves", "aria-labelledby": `moves-round-${round}` }, moves.map((m) => el("li", {
      class: [m.seat !== null && m.seat === mySeat ? "mine" : "", m.automatic ? "automatic" : "",
        m.index === undefined ? "result" : ""].filter(Boolean).join(" ") || null,
      // set fields only (a dataset keeps undefined as the text "undefined")
      dataset: Object.fromEntries(Object.entries({ action: m.index, seat: m.seat, do: m.do, card: m.card })
        .filter(([, value]) => value !== undefined && value !== null)),
    }, m.parts.map((part) => (typeof part === "object" && part !== null && "card" in part ? cardFace(part.card, v) : part))))),
  ]));
}

/** How the hand ended the match, when it did: won, and by an abandonment (whose), or cancelled
 * (FAIRNESS.md 7: `end`, `forfeit_team`), as /me/hands says it, the sides named as the score
 * names them. "" for a hand that did not. */
function scoreNote(r, sides) {
  const notes = [];
  if (r.end === "cancelled") notes.push("partida cancelada: ninguém ganha");
  if (r.end === "abandonment" && Number.isInteger(r.forfeit_team)) {
    notes.push(`abandono ${sides.of(r.forfeit_team)}`);
  }
  if (r.match_winner !== null && r.end !== "cancelled") notes.push(`partida ganha ${sides.by(r.match_winner)}`);
  return notes.length ? ` (${notes.join("; ")})` : "";
}

/** A Brazilian hand dealt at its special score, by its name and worth (RULES.md): the record
 * says it by its score alone, and a mão de ferro's moves only that cards went "às cegas". */
function specialHand(r) {
  const rules = RULES[r.variant];
  if (!rules?.special || !Array.isArray(r.score_before)) return "";
  const { ferro, team } = specialHandOf(r.variant, r.score_before);
  if (ferro) return `; mão de ferro: às cegas, vale ${rules.ladder[0]}`;
  return team !== null ? `; ${rules.specialName}: vale ${rules.specialValue} se jogada` : "";
}

function renderDetails(result, text, { mine, recordUrl, pinned, played }, checks) {
  const r = result.record;
  const v = r.variant;
  $("rec-commitment").textContent = r.commitment;
  renderCommitmentWhen(checks);
  $("rec-seed").textContent = r.seed;
  $("rec-variant").textContent = `${VARIANT_NAME[v] ?? v}, ${r.seats} lugares, mesa ${r.table}, mão ${r.hand}${specialHand(r)}`;
  $("rec-dealer").textContent = `lugar ${r.dealer.seat + 1} (${r.dealer.by === "draw" ? "sorteado" : "rodízio"})`;
  // the record keeps the score in team order and names nobody: each side is named by its seats
  // ("0 x 0 → 6 x 0" said nothing of whose 6), mine first as /me/hands has it
  const sides = recordSides(r, played?.seat);
  const first = sides.first;
  const pair = (score) => `${scorePoints(score[first], v)} x ${scorePoints(score[1 - first], v)}`;
  $("rec-score").replaceChildren(
    el("span", { class: "side", dataset: { team: first } }, sides.label(first)), " x ",
    el("span", { class: "side", dataset: { team: 1 - first } }, sides.label(1 - first)),
    `: ${pair(r.score_before)} → ${pair(r.score_after)}${scoreNote(r, sides)}`);
  $("rec-key").textContent = `${r.key_id} · ${r.public_key}`;
  // the record cannot tell a bot (bots send no entropy) from an absent player; this browser
  // knows the bots of the hands it played (table.js keeps them), else both are said possible
  const bots = played?.bots;
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
  renderMoves(r, played?.seat);
  const source = recordUrl ? `${window.location.origin}${recordUrl}` : shellWord(`${r.table}-${r.hand}.json`);
  // my contribution too, when this page knows it and it is meant to be in the record (not one
  // that never reached the table in time): offline, the CLI checks my entropy went into the deal
  const mineCheck = checks.find((c) => c.name === "mine");
  const withMine = mine !== null && mineCheck && mineCheck.status !== "warn";
  const mineOpt = withMine ? ` ${mineOption(mine)}` : "";
  // pin the house's published keys (the current one and every older one handed over to it),
  // or the one typed in the form, never the record's own (a forged record carries its forger's)
  const keys = pinned === houseKeys?.keys ? houseKeyOptions(houseKeys)
    : (pinned ?? []).map((k) => `--key ${typeof k === "string" ? k : k.public_key}`).join(" ");
  const noKey = "   # sem --key: fixe a chave publicada pela casa";
  $("cli-command").textContent = keys
    ? `barajamos-verify hand ${source} ${keys}${mineOpt}`
    : `barajamos-verify hand ${source}${mineOpt}${noKey}`;
  // the table's chain: only it shows the seed was fixed before the hand (FAIRNESS.md 12), so it
  // is the check to recommend; a table of this house's is served here, another one is a file
  const chain = HOUSE_TABLE.test(r.table)
    ? `${window.location.origin}/tables/${r.table}/chain` : shellWord(`${r.table}-chain.json`);
  $("cli-chain-command").textContent = keys
    ? `barajamos-verify chain ${chain} ${keys}` : `barajamos-verify chain ${chain}${noKey}`;
  const note = $("cli-mine-note");
  note.hidden = !withMine;
  note.textContent = withMine
    ? `O comando inclui a sua contribuição (${mineOpt.trim().startsWith("--mine-text") ? "a frase que você digitou" : "em hexadecimal"}): ele confere também que a sua entropia entrou no baralho.`
    : "";
  if (downloadUrl) URL.revokeObjectURL(downloadUrl);
  downloadUrl = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  const link = $("download");
  link.href = downloadUrl;
  link.download = `${r.table}-${r.hand}.json`;
  $("details").hidden = false;
}

/** Where the seed-chain check goes: right after the commitment's (the CLI's order of thought). */
function withChecks(checks, added) {
  const at = checks.findIndex((c) => c.name === "commitment") + 1;
  return [...checks.slice(0, at), ...added, ...checks.slice(at)];
}

/** The checks of the seed's being fixed before the hand: the signed seed chain, and what this browser saw. */
async function beforeTheHandChecks(record, pinned, seen, typed) {
  const added = [];
  if (seen) added.push(commitmentSeenCheck(record, seen));
  if (!HOUSE_TABLE.test(record.table)) {
    added.push({ name: "seed-chain", status: "skip",
      detail: "o registro não é de uma mesa desta casa: a sua cadeia de sementes é conferida com a cadeia da mesa, pela linha de comando (barajamos-verify chain)" });
    return added;
  }
  const entries = await tableChain(record.table);
  if (entries === null) {
    added.push({ name: "seed-chain", status: "skip",
      detail: `a cadeia da mesa (/tables/${record.table}/chain), com a âncora assinada das sementes, não pôde ser obtida` });
  } else {
    added.push(await seedChainCheck(record, entries, pinned ?? [], { typed }));
  }
  return added;
}

/** Who signed instead of the key the person typed, for the headline: the house's key or not. */
function signerWords(signer) {
  if (!signer || signer.published === null || signer.published === undefined) return signer ? ` (${signer.key_id})` : "";
  return signer.published ? `: a assinatura é da casa (${signer.key_id} ${signer.words})` : ` (${signer.key_id}, que ${signer.words})`;
}

/** `typed`: the key was typed by the person (not the house's published keys): a key that is not
 * theirs is "a key other than the one you typed", and said whether it is the house's. */
function failureHeadline(failed, typed) {
  const names = failed.map((c) => CHECK_NAMES[c.name] ?? c.name).join(", ");
  const meanings = [];
  // a key the house does not publish (the record's, or its seed anchor's): a key problem, not a
  // deck or seed one
  const foreignKey = (c) => (c.name === "key" && !/^key_id /.test(c.detail)) || (c.name === "seed-chain" && c.cause === "key");
  for (const c of failed) {
    let meaning = FAILURE_MEANING[c.name] ?? null;
    if (c.name === "seed-chain" && c.cause === "key") {
      meaning = typed
        ? `A âncora da cadeia de sementes foi assinada por uma chave diferente da que você digitou${signerWords(c.signer)}.`
        : "A âncora da cadeia de sementes foi assinada por uma chave que a casa não publica.";
    } else if (foreignKey(c)) {
      meaning = typed
        ? `Assinado por uma chave diferente da que você digitou${signerWords(c.signer)}.`
        : "Assinado por uma chave que a casa não publica (a chave da casa mudou sem passagem publicada, ou o registro não é da casa).";
    } else if (c.name === "key") {
      meaning = "O id da chave (key_id) do registro não é o da chave pública que ele traz.";
    }
    if (meaning && !meanings.includes(meaning)) meanings.push(meaning);
  }
  if (failed.every(foreignKey)) {
    meanings.push(typed
      ? "O baralho e a distribuição saem da semente, mas a assinatura não é da chave que você digitou: confira a chave que a casa publica fora deste site (o campo vazio usa a chave publicada por este servidor)."
      : "O baralho e a distribuição saem da semente, mas sem a assinatura da casa isso não prova nada: confira a chave que a casa publica fora deste site.");
  }
  return `FALHOU: ${names}. ${meanings.join(" ")}`;
}

// FAIRNESS.md 6 and 9: a record is at most 1 MiB of UTF-8 without a byte-order mark; anything
// else is unreadable, as the CLI says (the browser's text() drops a BOM and replaces bad bytes)
const RECORD_LIMIT = 1 << 20;

/** {text} of a record's bytes, or {error}: why they are not a record. */
async function recordText(blob) {
  const bytes = new Uint8Array(await blob.arrayBuffer());
  if (bytes.length > RECORD_LIMIT) return { error: "maior que o limite de 1 MiB de um registro" };
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    return { error: "começa com uma marca de ordem de bytes (BOM): salve-o como UTF-8 simples, sem ela" };
  }
  try {
    return { text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
  } catch {
    return { error: "não é texto UTF-8 válido" };
  }
}

async function check(text, { pinned, mine, recordUrl, expected = null, late = null, typedKey = false }) {
  setVerdict("pending", "Conferindo…");
  // a key typed in the form is the person's own pin, compared with the house's published keys
  const typed = typedKey ? { published: houseKeys?.keys ?? null } : null;
  let result;
  try {
    result = await verifyHandRecord(text, { pinnedKeys: pinned, refusedKeys: houseKeys?.refused ?? [], mine, expected, typed });
  } catch (err) {
    // input the spec calls unreadable (the CLI's exit 2) is no failed check
    setVerdict(err instanceof UnreadableError ? "unreadable" : "fail",
      `${err instanceof UnreadableError ? "Registro ilegível" : "Não foi possível conferir"}: ${err.message}`);
    return;
  }
  // a record out of its form (FAIRNESS.md 7, the CLI's exit 2) is unreadable, never verified:
  // the replay is not run here, so the structure is what stands between a nonsense record and
  // a green headline
  const structure = result.checks.find((c) => c.name === "structure");
  if (!result.readable || structure?.status !== "pass") {
    renderChecks(result.checks);
    $("details").hidden = true;
    setVerdict("unreadable", `Registro ilegível: ${result.error ?? structure?.detail}`);
    return;
  }
  const r = result.record;
  // the commitment this browser was shown before that hand, when it played it
  // the hand this browser played (table.js keeps it): my seat, its bots, the commitment shown
  const played = playedHere(r.table, r.hand);
  const seen = played?.commitment ?? seenCommitment(r.table, r.hand);
  const before = await beforeTheHandChecks(r, pinned, seen, typed);
  // my stored contribution that never reached the table in time (table.js noted it) is no failure
  const explained = late ? explainLateContribution(result, "late", late.seat) : result.checks;
  const checks = withChecks(explained, before);
  renderChecks(checks);
  renderDetails(result, text, { mine, recordUrl, pinned, played }, checks);
  const failed = checks.filter((c) => c.status === "fail");
  const wrongHand = failed.find((c) => c.name === "source");
  const byName = (name) => checks.find((c) => c.name === name);
  if (wrongHand) {
    // a genuine record, maybe, but of another hand: it says nothing about the one asked for
    setVerdict("fail", `FALHOU: o servidor respondeu com o registro de outra mão (${wrongHand.detail}). Ele não prova nada sobre a mão pedida.`);
    return;
  }
  if (failed.length) {
    setVerdict("fail", failureHeadline(failed, typed));
    return;
  }
  const derived = "o baralho e a distribuição saem da semente e das contribuições dos jogadores";
  if (byName("key")?.status === "warn") {
    // nothing pinned: the record's own key was used, and anyone can sign with their own key
    setVerdict("warn", `Conferido, mas sem a chave da casa: qualquer um poderia ter assinado este registro. Aqui, ${derived}; mas nada prova que a semente é da casa, nem que foi fixada antes da mão.`);
    return;
  }
  const anchoredBy = [];
  if (byName("seed-chain")?.status === "pass") anchoredBy.push("a semente é da cadeia que a casa assinou antes da mão");
  if (byName("seen")?.status === "pass") anchoredBy.push("o compromisso é o que a mesa mostrou a este navegador antes da mão");
  if (!anchoredBy.length) {
    // SHA-256(seed) = commitment holds for any seed the house makes up: that is no check
    setVerdict("warn", `Não verificado por completo: ${derived}, mas não foi possível conferir que a semente foi fixada antes da mão (veja “cadeia de sementes” abaixo). Confira a cadeia da mesa pela linha de comando (barajamos-verify chain).`);
    return;
  }
  const unsigned = byName("signature")?.status === "skip";
  // signed by an older key whose hand-over this browser could not check (no Ed25519)
  const handedOver = pinned?.find((k) => k.public_key === r.public_key && k.verified === false);
  const warned = checks.some((c) => c.status === "warn");
  const signer = byName("key")?.signer;
  setVerdict("ok", `Verificado: ${anchoredBy.join(", e ")}; e ${derived}.`
    + (typed ? ` Assinado pela chave que você digitou${signer?.words ? `, que ${signer.words}` : ""}.` : "")
    + (unsigned ? " A assinatura não pôde ser conferida neste navegador: use a linha de comando abaixo." : "")
    + (handedOver ? " A passagem da chave anterior da casa à atual também não: quem a confere é a verificação da cadeia da mesa pela linha de comando (barajamos-verify chain)." : "")
    + (warned ? " Leia os avisos abaixo." : ""));
}

async function loadHand() {
  const id = `${tableId}-${handNumber}`;
  const url = `/hands/${id}`;
  tableChain(tableId); // on its way while the record is fetched
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
  const { text, error } = await recordText(response);
  if (error) {
    setVerdict("unreadable", `Registro ilegível: ${error}.`);
    return;
  }
  const mine = myContribution(tableId, handNumber);
  if (mine) $("mine-hex").value = mine;
  const played = playedHere(tableId, handNumber);
  // my seat, when this browser kept the hand in its list (not when I left before its record)
  const late = contributionState(tableId, handNumber) === "late"
    ? { seat: Number.isInteger(played?.seat) ? played.seat : null } : null;
  // the record must be the hand of this page's address, not whatever hand the server sent
  const expected = { table: tableId, hand: Number(handNumber) };
  await check(text, { pinned: houseKeys?.keys ?? null, mine, recordUrl: url, expected, late });
}

$("record-file").addEventListener("change", async () => {
  const file = $("record-file").files[0];
  if (!file) return;
  const { text, error } = await recordText(file);
  if (error) {
    $("record-text").value = "";
    setVerdict("unreadable", `O arquivo não é um registro legível: ${error}.`);
    return;
  }
  $("record-text").value = text;
});

/**
 * A refused field of the form: the refusal said next to it (linked, `aria-invalid`) and in the
 * verdict, and the focus on the field; `null` clears it.
 */
function fieldError(id, text) {
  const field = $(id);
  const note = $(`${id}-error`);
  note.hidden = text === null;
  note.textContent = text ?? "";
  if (text === null) {
    field.removeAttribute("aria-invalid");
    field.removeAttribute("aria-describedby");
    return;
  }
  field.setAttribute("aria-invalid", "true");
  field.setAttribute("aria-describedby", note.id);
  setVerdict("unreadable", text);
  field.focus();
}

$("paste-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  fieldError("record-text", null);
  fieldError("pinned-key", null);
  const text = $("record-text").value;
  if (!text.trim()) {
    fieldError("record-text", "Cole o JSON de um registro ou escolha um arquivo.");
    return;
  }
  const key = $("pinned-key").value.trim();
  if (key && !/^[0-9a-f]{64}$/.test(key)) {
    fieldError("pinned-key", "A chave pública são 64 dígitos hexadecimais minúsculos.");
    return;
  }
  const mine = $("mine-hex").value.trim().toLowerCase() || null;
  // a key typed here is pinned alone; else the house's keys
  await check(text, { pinned: key ? [key] : houseKeys?.keys ?? null, mine, recordUrl: null, typedKey: Boolean(key) });
  // the verdict is above the form, a screen or more away on a phone: the focus goes to it, and
  // with it the page (a phone review: "Verificar" seemed to do nothing)
  $("verdict-title").focus();
});

houseKeys = await fetchHouseKeys();
if (tableId && handNumber) await loadHand();
