// The ranked queue page (/ranked) and the arena page (/arena) follow the player's state without
// reloading under the keyboard focus: they poll the JSON API and update only their status
// regions (polite live regions), and open the table the pairing formed for the player. Without
// script the pages reload themselves (<noscript> refresh) and link to the table instead.

import { api, csrf, el, openedTable, openTable } from "./common.js";

const WAITING = new Set(["inviting", "queued", "paired"]);
// out of the queue the page still looks, less often, for an invitation or the end of a pause
const IDLE_POLL_MS = 5000;
// after a failed poll (the server restarting, the network away): try again, a bit later
const RETRY_MS = 5000;
const QUEUE_STARTED = "Sua partida começou:";
const ARENA_STARTED = "Sua partida da arena começou: o relógio da mesa está correndo.";

// A page that reloads itself because the player's situation changed while waiting keeps following
// after the reload: the table may have opened between the poll that saw the change and the
// reloaded page (a duo accepted, then the pairing and the launch came within the reload), and a
// page that only linked the table would leave its player there while their clock runs. A page the
// player opened themselves with a table on follows it too when this tab has not been at that
// table yet (common.js openedTable); back from the table, it links it and does not follow.
const FOLLOW_KEY = "barajamos.ranked.follow";

function reloadFollowing() {
  try {
    sessionStorage.setItem(FOLLOW_KEY, window.location.pathname);
  } catch {
    // storage refused (private mode): the reloaded page links the table, as without script
  }
  window.location.reload();
}

/** Whether this page was loaded by its own reload while following the player (read once). */
function reloadedFollowing() {
  try {
    const path = sessionStorage.getItem(FOLLOW_KEY);
    sessionStorage.removeItem(FOLLOW_KEY);
    return path === window.location.pathname;
  } catch {
    return false;
  }
}

function setText(node, text) {
  if (node && node.textContent !== text) node.textContent = text;
}


// --- /ranked ----------------------------------------------------------------------------------

/** An arena player's place, for the page's shape: waiting in the arena, or at one of its tables. */
function arenaPlace(inArena, table) {
  return inArena ? (table ? "arena-table" : "arena") : "-";
}

function queueShape(queue) {
  return `${queue.state}:${queue.pause_remaining_s > 0 ? "paused" : "free"}:${arenaPlace(queue.arena, queue.arena?.table)}`;
}

function invitationKey(invitation) {
  return `${invitation.from}|${invitation.variant}|${invitation.seats}`;
}

function invitationItem(invitation, canAccept, paused) {
  const item = el("li", { class: "table-item", dataset: { key: invitationKey(invitation) } },
    el("p", { class: "invitation-text", text: invitation.text }));
  if (canAccept) {
    item.append(el("form", { method: "post", action: "/ranked/queue" },
      el("input", { type: "hidden", name: "csrf", value: csrf }),
      el("input", { type: "hidden", name: "variant", value: invitation.variant }),
      el("input", { type: "hidden", name: "seats", value: String(invitation.seats) }),
      el("input", { type: "hidden", name: "partner", value: invitation.from }),
      el("button", { type: "submit" }, `Aceitar o convite de ${invitation.from}`)));
  } else if (paused) {
    item.append(el("p", { class: "muted", text: "Você está suspenso: poderá aceitar quando a suspensão acabar." }));
  } else {
    item.append(el("p", { class: "muted", text: "Para aceitar, saia antes da fila (ou da mesa) em que você está." }));
  }
  item.append(el("form", { method: "post", action: "/ranked/invitations/decline" },
    el("input", { type: "hidden", name: "csrf", value: csrf }),
    el("input", { type: "hidden", name: "partner", value: invitation.from }),
    el("button", { type: "submit", class: "secondary" }, `Recusar o convite de ${invitation.from}`)));
  return item;
}

function showInvitations(queue) {
  const box = document.getElementById("queue-invitations");
  const list = document.getElementById("queue-invitation-list");
  if (!box || !list) return;
  const wanted = queue.invitations.map(invitationKey);
  const shown = [...list.children].map((li) => li.dataset.key);
  if (wanted.join("\n") !== shown.join("\n")) {
    // an invitation came or went: rebuilt (its buttons are new; nothing else holds the focus)
    const paused = queue.pause_remaining_s > 0;
    const canAccept = queue.state === "idle" && !paused;
    list.replaceChildren(...queue.invitations.map((inv) => invitationItem(inv, canAccept, paused)));
  } else {
    queue.invitations.forEach((inv, i) => setText(list.children[i].querySelector(".invitation-text"), inv.text));
  }
  box.hidden = queue.invitations.length === 0;
  // "you declined X's invitation" is past once X invites again
  const declined = document.getElementById("queue-declined");
  if (declined && queue.invitations.some((inv) => inv.from === declined.dataset.inviter)) {
    declined.hidden = true;
  }
}

function showQueueSizes(data) {
  const box = document.getElementById("queue-sizes");
  if (!box) return;
  const names = { paulista: "Paulista", mineiro: "Mineiro", argentino: "Argentino" };
  const lines = data.queues.map((q) => `${names[q.variant] ?? q.variant} ${q.seats === 2 ? "1x1" : "2x2"}: ${q.waiting} esperando`);
  const shown = [...box.querySelectorAll("li")].map((li) => li.textContent);
  if (lines.join("\n") === shown.join("\n") && (lines.length > 0 || box.querySelector("p"))) return;
  box.replaceChildren(lines.length
    ? el("ul", { class: "tables" }, lines.map((line) => el("li", { class: "table-item", text: line })))
    : el("p", { class: "muted", text: "Ninguém na fila agora." }));
}

function formatWaited(seconds) {
  const total = Math.ceil(Math.max(0, seconds));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const secs = total % 60;
  const two = (n) => String(n).padStart(2, "0");
  if (hours) return `${hours} h ${two(minutes)} min`;
  if (minutes) return `${minutes} min ${two(secs)} s`;
  return `${secs} s`;
}

function queuePage(root) {
  const inArena = root.dataset.arena === "yes";
  // (an arena table that ended changes it too: the page then links the arena, not that table)
  const shape = `${root.dataset.state}:${root.dataset.paused === "yes" ? "paused" : "free"}:${arenaPlace(inArena, root.dataset.arenaTable)}`;
  const followed = reloadedFollowing();
  const noticeNode = document.getElementById("queue-notice");
  if (root.dataset.state === "seated") {
    // followed there when this page reloaded itself while waiting, or when this tab has not been
    // at that table yet; back from it, the page only links it
    const table = root.dataset.table;
    if (table && (followed || !openedTable(table))) openTable(table, noticeNode, QUEUE_STARTED);
    return;
  }
  // a player in an arena is out of the queue, but its tables start by themselves: this page
  // follows them too, as the arena page does (their clocks run from the first second)
  const arenaTable = root.dataset.arenaTable || null;
  if (arenaTable && (followed || !openedTable(arenaTable))) {
    openTable(arenaTable, noticeNode, ARENA_STARTED);
    return;
  }
  const waitMs = Number(root.dataset.pollMs) || 2000;
  const stateNode = document.getElementById("queue-state");

  async function poll() {
    let data;
    try {
      data = await api("GET", "/api/ranked/queue");
    } catch (error) {
      if (error.status === 401) {
        window.location.reload(); // the session ended: the page shows the login
        return;
      }
      setTimeout(poll, RETRY_MS);
      return;
    }
    const queue = data.queue;
    if (queue.state === "seated" && queue.table) {
      setText(stateNode, queue.message);
      stateNode.dataset.state = "seated";
      openTable(queue.table, noticeNode, QUEUE_STARTED);
      return;
    }
    if (queue.arena?.table && queue.arena.table !== arenaTable) {
      setText(stateNode, queue.message);
      openTable(queue.arena.table, noticeNode, ARENA_STARTED);
      return;
    }
    if (queueShape(queue) !== shape) {
      // another situation (joined by the partner, back out of the queue, a pause over): its
      // forms differ, so the page is loaded again, once, still following
      reloadFollowing();
      return;
    }
    setText(stateNode, queue.message);
    noticeNode.hidden = !queue.notice;
    setText(noticeNode, queue.notice ?? "");
    const newsNode = document.getElementById("queue-news");
    newsNode.hidden = !queue.news;
    setText(newsNode, queue.news?.text ?? "");
    setText(document.getElementById("queue-waited"), formatWaited(queue.waited_s));
    if (queue.window) setText(document.getElementById("queue-window"), `até ${Math.round(queue.window)} pontos`);
    showInvitations(queue);
    showQueueSizes(data);
    setTimeout(poll, WAITING.has(queue.state) || queue.arena ? waitMs : IDLE_POLL_MS);
  }

  setTimeout(poll, WAITING.has(root.dataset.state) || inArena ? waitMs : IDLE_POLL_MS);
}

// --- /arena -----------------------------------------------------------------------------------

function arenaShape(arenas) {
  return arenas.map((a) => `${a.id}:${a.state}:${a.joined}:${a.standings.length > 0}`).join(",");
}

function standingRow(s) {
  const name = el("th", { scope: "row" }, s.player ?? "?");
  if (s.on_fire) name.append(" ", el("span", { class: "badge", text: "em chamas" }));
  return el("tr", {}, el("td", { text: String(s.rank) }), name, el("td", { text: String(s.points) }),
    el("td", { text: String(s.wins) }), el("td", { text: String(s.games) }));
}

function arenaPage(root) {
  const followed = reloadedFollowing();
  if (root.dataset.follow !== "yes") return;
  const waitMs = Number(root.dataset.pollMs) || 5000;
  const known = root.dataset.table || null;
  const tableNode = document.getElementById("arena-table");
  if (known && (followed || !openedTable(known))) {
    // the table was formed while this page reloaded itself, or while the player was elsewhere
    // (this tab has not been at it): followed, as a poll would have
    openTable(known, tableNode, ARENA_STARTED);
    return;
  }
  const sections = [...document.querySelectorAll("section[data-arena]")];
  const shape = arenaShape(sections.map((s) => ({
    id: s.dataset.arena, state: s.dataset.arenaState,
    joined: Boolean(s.querySelector('form[action$="/leave"]')),
    standings: { length: s.querySelectorAll("tbody tr").length },
  })));

  async function poll() {
    let data;
    try {
      data = await api("GET", "/api/ranked/arenas");
    } catch (error) {
      if (error.status === 401) {
        window.location.reload();
        return;
      }
      setTimeout(poll, RETRY_MS);
      return;
    }
    const mine = data.arenas.find((a) => a.table)?.table ?? null;
    if (mine && mine !== known) {
      openTable(mine, tableNode, ARENA_STARTED);
      return;
    }
    const shown = data.arenas.filter((a) => sections.some((s) => s.dataset.arena === a.id));
    if (arenaShape(shown) !== shape || shown.length !== sections.length) {
      // an arena started, ended, or the player left it; a page without a table follows on
      if (known) window.location.reload();
      else reloadFollowing();
      return;
    }
    for (const arena of shown) {
      const body = document.getElementById(`standings-${arena.id}`);
      if (body) body.replaceChildren(...arena.standings.map(standingRow));
      setText(document.getElementById(`arena-${arena.id}-now`), arena.now_text);
    }
    if (known && !mine) tableNode.hidden = true; // that table is over; the next one will come
    // anyone watching follows the arenas until they close: standings, start, end
    if (data.arenas.some((a) => a.state !== "closed") || mine) setTimeout(poll, waitMs);
  }

  setTimeout(poll, waitMs);
}

const queueRoot = document.getElementById("queue-status");
if (queueRoot) queuePage(queueRoot);
const arenaRoot = document.getElementById("arena-follow");
if (arenaRoot) arenaPage(arenaRoot);
