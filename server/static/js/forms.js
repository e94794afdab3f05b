// The server-posted forms (sign-up and log-in, /account, the ranked queue, an appeal on /me) come
// back after a refused submit with the error next to its field (`aria-invalid="true"`): the
// keyboard focus goes to that field, not to the top of the page. (The pages allow no inline
// script: this file is loaded by every page, and does nothing where no field is invalid.)

// A page answering an accepted form whose result must be read first (an operator's new password
// link) marks that result's heading `data-focus-on-load`: the focus starts there.
const invalid = document.querySelector('main form [aria-invalid="true"]');
if (invalid) invalid.focus();
else document.querySelector("main [data-focus-on-load]")?.focus();

// On a phone the header's links, my name and "Sair" fold behind its "Menu" button (the
// stylesheet folds them only in narrow windows, and only once this has run: without it every
// link shows, as on a wide screen). The button says whether they are shown; Escape folds them
// again and keeps the focus on the button.
const header = document.querySelector("header.site");
const menuToggle = header?.querySelector(".menu-toggle");
if (header && menuToggle) {
  // the button's aria-expanded is the one state: the stylesheet folds the links by it
  const showMenu = (open) => menuToggle.setAttribute("aria-expanded", String(open));
  menuToggle.addEventListener("click", () => showMenu(menuToggle.getAttribute("aria-expanded") !== "true"));
  header.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || menuToggle.getAttribute("aria-expanded") !== "true") return;
    showMenu(false);
    menuToggle.focus();
  });
  header.classList.add("menu-ready");
}

// Moments on players' pages (`<time data-local>`, server/pages.py local_time) come said in UTC:
// shown in the reader's own time zone, named, with the UTC kept in the title.
const LOCAL_STYLES = {
  seconds: { day: "2-digit", month: "2-digit", year: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" },
  minutes: { day: "2-digit", month: "2-digit", year: "numeric", hour: "2-digit", minute: "2-digit" },
  short: { day: "2-digit", month: "2-digit", hour: "2-digit", minute: "2-digit" },
};
for (const node of document.querySelectorAll("time[data-local]")) {
  const moment = new Date(node.dateTime);
  const style = LOCAL_STYLES[node.dataset.local];
  if (Number.isNaN(moment.getTime()) || !style) continue;
  node.title = node.textContent;
  node.textContent = new Intl.DateTimeFormat("pt-BR", { ...style, timeZoneName: "short" })
    .format(moment).replace(",", "");
}

// The operators' list filters (a `<details class="filters">`) come folded unless some are in use:
// open on a wide screen, where they do not push the list off the first screen as on a phone.
const filters = document.querySelector("details.filters");
if (filters && window.matchMedia("(min-width: 48rem)").matches) filters.open = true;

// An operator's irreversible form (ending an arena now) asks first: its `data-confirm` is the
// question (a phone review: one tap ended an arena for everyone).
document.addEventListener("submit", (event) => {
  const form = event.target instanceof HTMLFormElement ? event.target : null;
  if (form?.dataset.confirm && !window.confirm(form.dataset.confirm)) event.preventDefault();
});
