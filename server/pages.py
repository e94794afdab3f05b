"""The browser pages: server-rendered jinja2 templates and the static JavaScript client.

The pages are thin: they render the frame of each screen (in pt-BR) and hand the browser what it
needs to start (the CSRF token, the table id, the signed-in user). Everything live, the lobby,
the table and the hand records, comes from the live house's JSON API and WebSocket protocol
(docs/PROTOCOL.md), which the client in `server/static/js/` speaks. The sign-up and log-in forms
are real HTML forms that work without JavaScript. See docs/BROWSER.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import jinja2
import markupsafe
from aiohttp import web

from server import account_data, accounts, password_links
from server.accounts import MAX_PASSWORD, MIN_PASSWORD, AccountError, User
from server.app import (
    CONFIG,
    PASSWORD_COST,
    POOL,
    ascii_uint,
    change_password,
    client_group,
    csrf_token,
    current_user,
    end_other_sessions,
    end_session,
    erase_own_account,
    keep_device,
    read_body,
    request_cookie,
    request_device,
    rotate_csrf,
    sign_out_request,
)
from verifier import bundle

# docs/PROTOCOL.md: table ids are 16 lowercase hex digits
TABLE_ID: Final = re.compile(r"[0-9a-f]{16}")
TEMPLATES_DIR: Final = Path(__file__).resolve().parent.parent / "templates"
STATIC_DIR: Final = Path(__file__).resolve().parent / "static"
JINJA: Final = web.AppKey("jinja", jinja2.Environment)
# when each account last downloaded its data (the event loop's clock): one download a
# `DOWNLOAD_EVERY` (each reads every row of the account, in one snapshot)
DOWNLOADED: Final = web.AppKey("downloaded", dict[int, float])
DOWNLOAD_EVERY: Final = 10.0

# Scripts and styles only from this origin, no inline script: a table page that somehow
# rendered a hostile name still could not run it. `connect-src 'self'` covers the WebSocket.
CONTENT_SECURITY_POLICY: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)


@dataclass(frozen=True, slots=True)
class FormError:
    """A refused form, as shown to the player: which field, and what to do, in pt-BR."""

    field: str
    message: str


def account_error_pt(exc: AccountError, password: object) -> FormError:
    """The account layer's stable codes, said in the tables' language."""
    if exc.code == "bad_name":
        return FormError(
            "name", "O nome precisa ter de 3 a 24 letras sem acento, números, '.', '_' ou '-'"
                    " (sem espaços)."
        )
    if exc.code == "reserved_name":
        return FormError("name", "Nomes que começam com “apagado-” são da casa (contas"
                                 " apagadas): escolha outro.")
    if exc.code == "name_taken":
        return FormError("name", "Esse nome já está em uso: escolha outro.")
    if exc.code == "weak_password":
        size = len(password) if isinstance(password, str) else 0
        if size < MIN_PASSWORD:
            return FormError(
                "password", f"A senha precisa ter pelo menos {MIN_PASSWORD} caracteres."
            )
        if size > MAX_PASSWORD:
            return FormError(
                "password", f"A senha pode ter no máximo {MAX_PASSWORD} caracteres."
            )
        return FormError(
            "password",
            "Senha fácil demais: evite senhas comuns, caracteres repetidos e o seu próprio nome.",
        )
    if exc.code == "too_many_accounts":
        return FormError(
            "name", "Muitas contas criadas a partir deste endereço: tente de novo daqui a uma hora."
        )
    if exc.code == "rate_limited" and exc.scope == "address":
        return FormError(
            "name", "Muitas tentativas erradas a partir desta rede nos últimos 15 minutos:"
            " contam as de todos que usam o mesmo endereço (numa lan house, numa"
            " universidade). Tente de novo em até 15 minutos, ou entre por um navegador em que"
            " você já entrou antes."
        )
    if exc.code == "rate_limited":
        return FormError(
            "name", "Muitas tentativas erradas nesta conta: tente de novo em até 15 minutos."
        )
    if exc.code == "bad_credentials":
        return FormError("password", "Nome ou senha incorretos.")
    return FormError("name", "Não foi possível concluir o pedido. Tente de novo.")


def by_field(errors: list[FormError]) -> dict[str, FormError]:
    """The errors to show, one under each field (the first said of it), in the form's order."""
    shown: dict[str, FormError] = {}
    for error in errors:
        shown.setdefault(error.field, error)
    return shown


def decimal_pt(value: float, places: int = 1, sign: bool = False) -> str:
    """A number as pt-BR writes it, with a decimal comma: "+162,3" (the jinja filter
    `decimal_pt`). No thousands separator: the house writes ratings and chips as "1500"."""
    if round(value, places) == 0:
        value = 0.0  # not "-0,0"
    text = f"{value:+.{places}f}" if sign else f"{value:.{places}f}"
    # the minus sign, as the table page writes it (not a hyphen)
    return text.replace(".", ",").replace("-", "\u2212")


def render(
    request: web.Request, template: str, *, status: int = 200,
    headers: dict[str, str] | None = None, **context: Any
) -> web.Response:
    env = request.app[JINJA]
    user = current_user(request)
    body = env.get_template(template).render(
        user=user, csrf=csrf_token(request), path=request.path, **context
    )
    response = web.Response(text=body, status=status, content_type="text/html", charset="utf-8",
                            headers=headers)
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    # pages carry the CSRF token and who is signed in: never from a shared cache
    response.headers["Cache-Control"] = "no-store"
    return response


def _redirect(location: str) -> web.Response:
    return web.Response(status=303, headers={"Location": location})


def _login_wall(request: web.Request) -> web.Response:
    return render(
        request, "home.html", status=401, next=request.path_qs,
        notice="Entre ou crie uma conta para ver esta página.",
    )


# a local path: one "/", not followed by another "/" or a backslash (browsers read "/\host" as
# "//host", another site); no backslash or control character (CR/LF: header splitting) anywhere
_LOCAL_PATH: Final = re.compile(r"/(?![/\\])[^\\\x00-\x1f\x7f]*")


def _safe_next(value: object) -> str:
    """Only a local path: a crafted link may not bounce a fresh login to another site."""
    if isinstance(value, str) and _LOCAL_PATH.fullmatch(value):
        return value
    return "/"


# --- pages ------------------------------------------------------------------------------------


async def home(request: web.Request) -> web.Response:
    next_path = _safe_next(request.query.get("next"))
    # sent here to log in first (a form posted after the session ended): say so, as the wall does
    notice = ("Entre ou crie uma conta para ver esta página."
              if next_path != "/" and current_user(request) is None else None)
    return render(request, "home.html", next=next_path, notice=notice)


async def _open_session(request: web.Request, user: User, next_path: str) -> web.Response:
    token = await accounts.open_session(request.app[POOL], user,
                                        request.headers.get("User-Agent"))
    response = _redirect(next_path)
    rotate_csrf(request, session=token)
    accounts.set_cookie(
        response, accounts.SESSION_COOKIE, token,
        secure=request.app[CONFIG].secure_cookies,
        max_age=int(accounts.SESSION_LIFETIME.total_seconds()),
    )
    await keep_device(request, response, user)
    return response


async def signup_form(request: web.Request) -> web.Response:
    body = await read_body(request)
    name, password = body.get("name"), body.get("password")
    next_path = _safe_next(body.get("next"))
    # every field's problem at once, each under its field (the name, the password, the repeat,
    # a name already taken), not one per submit; none of them costs a hash, nor counts against
    # the address's sign-ups
    problems = await accounts.registration_problems(request.app[POOL], name, password)
    errors = [account_error_pt(exc, password) for exc in problems]
    if password != body.get("password2"):
        errors.append(FormError("password2", "As duas senhas não são iguais."))
    if errors:
        return render(request, "home.html", status=problems[0].status if problems else 400,
                      signup_errors=by_field(errors), signup_name=name, next=next_path)
    try:
        user = await accounts.register(request.app[POOL], name, password,
                                       request.app[PASSWORD_COST], remote=client_group(request),
                                       per_hour=request.app[CONFIG].registrations_per_hour)
    except AccountError as exc:  # too many sign-ups from here, or the name taken meanwhile
        return render(request, "home.html", status=exc.status, headers=exc.headers(),
                      signup_errors=by_field([account_error_pt(exc, password)]),
                      signup_name=name, next=next_path)
    return await _open_session(request, user, next_path)


async def login_form(request: web.Request) -> web.Response:
    body = await read_body(request)
    name, password = body.get("name"), body.get("password")
    next_path = _safe_next(body.get("next"))
    try:
        user = await accounts.authenticate(request.app[POOL], name, password,
                                           client_group(request), request.app[PASSWORD_COST],
                                           request_device(request))
    except AccountError as exc:
        return render(request, "home.html", status=exc.status, headers=exc.headers(),
                      login_error=account_error_pt(exc, password), login_name=name,
                      next=next_path)
    return await _open_session(request, user, next_path)


async def logout_form(request: web.Request) -> web.Response:
    await end_session(request)
    response = _redirect("/")
    rotate_csrf(request, session=None)
    accounts.del_cookie(response, accounts.SESSION_COOKIE,
                        secure=request.app[CONFIG].secure_cookies)
    return response


def _table_not_found(request: web.Request) -> web.Response:
    return render(request, "error.html", status=404, title="Mesa não encontrada",
                  message="Esse endereço não é de uma mesa: o id tem 16 dígitos hexadecimais.")


async def table_page(request: web.Request) -> web.Response:
    table_id = request.match_info["table"]
    if not TABLE_ID.fullmatch(table_id):
        return _table_not_found(request)
    if current_user(request) is None:
        if request.query.get("invite"):
            # a friend's invitation, opened signed out: said so (the page said only to sign
            # in, nothing of a table); nothing of the table is looked up for a visitor
            return render(request, "home.html", status=401, next=request.path_qs,
                          notice="Você recebeu um convite para uma mesa de truco: entre ou crie"
                                 " uma conta, e a mesa abre em seguida.")
        return _login_wall(request)
    return render(request, "table.html", table_id=table_id, ranked_stake=_ranked_stake(request))


def _ranked_stake(request: web.Request) -> int | None:
    """The chips each player stakes at a ranked table (the resign warning says what is lost),
    when the ranked service is set up."""
    from server.ranked.service import RANKED_SETTINGS

    settings = request.app.get(RANKED_SETTINGS)
    return None if settings is None else settings.stake


async def hand_page(request: web.Request) -> web.Response:
    table_id = request.match_info["table"]
    hand = request.match_info["hand"]
    if not TABLE_ID.fullmatch(table_id):
        return _table_not_found(request)
    from server.live.api import MAX_STORED_HAND, public_record

    number = ascii_uint(hand)
    digits = hand.isascii() and hand.isdigit()
    if digits and (number is None or number > MAX_STORED_HAND):  # None: over 18 digits
        return render(request, "error.html", status=404, title="Mão não encontrada",
                      message="Não há mão com esse número: nenhuma mesa chega tão longe.")
    if number is None or number < 1:
        return render(request, "error.html", status=404, title="Mão não encontrada",
                      message="O número da mão precisa ser um inteiro positivo.")
    if hand != str(number):  # `02`: the hand's one address
        raise web.HTTPMovedPermanently(f"/h/{table_id}/{number}")
    # the page reads the record itself (`/hands/{id}`) and says when there is none; its status
    # says so too, as that JSON's: 404 for a hand never played or still in play
    recorded = await public_record(request.app[POOL], table_id, number) is not None
    # the seat the signed-in player had in that hand: the page says "Você" for it in any
    # browser (it knew it only in the browser that played the hand)
    user = current_user(request)
    my_seat = None if user is None or not recorded else await request.app[POOL].fetchval(
        "SELECT array_position(m.players, $3::bigint) - 1 FROM live_hands h"
        " JOIN live_matches m ON m.table_id = h.table_id AND m.number = h.match_number"
        " WHERE h.table_id = $1 AND h.hand = $2", table_id, number, user.id)
    return render(request, "hand.html", status=200 if recorded else 404, table_id=table_id,
                  hand_number=number, my_seat=my_seat)


async def verify_page(request: web.Request) -> web.Response:
    return render(request, "hand.html", table_id=None, hand_number=None)


VERIFIER_BUNDLE: Final = web.AppKey("verifier_bundle", bytes)


async def verifier_page(request: web.Request) -> web.Response:
    """How to check offline: the verifier to download (its SHA-256, how to rebuild it from the
    source), what it needs, and the house's key with its hand-overs in words."""
    from server.live import HOUSE

    house = request.app.get(HOUSE)
    handovers = [] if house is None else [
        {"date": local_time(datetime.fromtimestamp(h["at"], UTC), "minutes"),
         "old": h["key_id"], "new": h["new_key_id"]}
        for h in house.handovers
    ]
    return render(request, "verifier.html",
                  house_public_key=None if house is None else house.public_key.hex(),
                  house_handovers=handovers)


async def verifier_download(request: web.Request) -> web.Response:
    """The verifier as one file (`verifier.bundle`): the same bytes as a build from the source."""
    data = request.app[VERIFIER_BUNDLE]
    return web.Response(body=data, content_type="application/zip", headers={
        "Content-Disposition": f'attachment; filename="{bundle.NAME}"',
        "ETag": f'"{bundle.digest(data)}"', "Cache-Control": "public, max-age=3600",
        "X-Content-Type-Options": "nosniff"})


def back_to(page: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A view answering 303 to `page`: a form's address opened again (a GET) leads to the
    page the form is on."""
    async def back(request: web.Request) -> web.StreamResponse:
        return web.Response(status=303, headers={"Location": page})
    return back


# /me/hands lists the tables of `GET /api/me/tables` (its page size, `?before=` its cursor) or
# one table (`?table=`): the same page of tables, for their matches' seats


# a page of my tables' matches, by table and match, with the hands each match played
# (`barajamos bench queries` times it on a grown database)
HANDS_MATCHES_SQL: Final = (
    "WITH mine AS ("
    " SELECT m.table_id, max(m.started_at) AS last_match FROM live_matches m"
    " WHERE m.players @> ARRAY[$1::bigint] AND ($2::text IS NULL OR m.table_id = $2)"
    " GROUP BY m.table_id"
    " HAVING $3::timestamptz IS NULL OR (max(m.started_at), m.table_id) < ($3, $4)"
    " ORDER BY last_match DESC, m.table_id DESC LIMIT $5)"
    " SELECT m.table_id, m.number, array_position(m.players, $1::bigint) - 1 AS seat,"
    "  ARRAY(SELECT u.name FROM unnest(m.players) WITH ORDINALITY AS p(id, n)"
    "        LEFT JOIN users u ON u.id = p.id ORDER BY p.n) AS names,"
    "  h.first_hand, h.last_hand"
    " FROM live_matches m JOIN mine ON mine.table_id = m.table_id"
    # each listed table's hands read once, grouped by match (a lookup per match walked
    # the table's hands from one end: quadratic in a long table's matches)
    " JOIN (SELECT table_id, match_number, min(hand) AS first_hand, max(hand) AS last_hand"
    "   FROM live_hands WHERE table_id IN (SELECT table_id FROM mine)"
    "   GROUP BY table_id, match_number) h"
    "   ON h.table_id = m.table_id AND h.match_number = m.number"
    " WHERE m.players IS NOT NULL"
    " ORDER BY m.table_id, m.number"
)


async def _hands_matches(request: web.Request, user: User) -> dict[str, list[dict[str, Any]]]:
    """Who sat where in each match at the tables /me/hands lists: a hand record names no player
    and keeps its scores in seat order, and the page says them from my side, as the table page
    does. {table: [{number, seat (mine; null when I did not play that match), names (seat order;
    null for a bot), first_hand, last_hand}]}, for the tables where I played a match (matches
    started before their players were kept have none)."""
    from server.live.api import PLAYED_PAGE, played_cursor

    asked = request.query.get("table")
    before = request.query.get("before")
    table = asked if asked is not None and TABLE_ID.fullmatch(asked) else None
    cursor: tuple[datetime, str] | None = None
    if table is None and before is not None:
        cursor = played_cursor(before)
        if cursor is None:
            return {}
    rows = await request.app[POOL].fetch(
        HANDS_MATCHES_SQL,
        user.id, table, None if cursor is None else cursor[0],
        None if cursor is None else cursor[1], PLAYED_PAGE)
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(row["table_id"], []).append({
            "number": row["number"], "seat": row["seat"], "names": list(row["names"]),
            "first_hand": row["first_hand"], "last_hand": row["last_hand"]})
    return out


async def my_hands(request: web.Request) -> web.Response:
    user = current_user(request)
    if user is None:
        return _login_wall(request)
    return render(request, "hands.html", matches=await _hands_matches(request, user))


async def account_download(request: web.Request) -> web.StreamResponse:
    """Everything the house keeps about the signed-in account, as a JSON file
    (`server.account_data`); within `DOWNLOAD_EVERY` of the last one, a 429 page saying when
    to try again."""
    user = current_user(request)
    if user is None:
        return _login_wall(request)
    downloaded = request.app[DOWNLOADED]
    now = asyncio.get_running_loop().time()
    for uid in [uid for uid, at in downloaded.items() if now - at >= DOWNLOAD_EVERY]:
        del downloaded[uid]
    if user.id in downloaded:
        wait = math.ceil(DOWNLOAD_EVERY - (now - downloaded[user.id]))
        return render(request, "error.html", status=429, headers={"Retry-After": str(wait)},
                      title="Espere um pouco",
                      message=f"Os seus dados acabaram de ser baixados: tente de novo em"
                              f" {wait} s.")
    downloaded[user.id] = now
    token = request_cookie(request, accounts.SESSION_COOKIE)
    async with request.app[POOL].acquire() as conn, conn.transaction(
            isolation="repeatable_read", readonly=True):
        at: datetime = await conn.fetchval("SELECT now()")
        doc = await account_data.collect(
            conn, user.id, session_hash=None if token is None else accounts.token_hash(token),
            now=at)
    if doc is None:  # (the account was erased meanwhile: its session ended with it)
        return _login_wall(request)
    return web.Response(body=account_data.encode(doc), content_type="application/json",
                        charset="utf-8", headers={
                            "Content-Disposition": "attachment; filename="
                            f'"barajamos-{user.name}-{at.astimezone(UTC):%Y-%m-%d}.json"',
                            "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"})


def _password_error_pt(exc: AccountError, new: object) -> FormError:
    """A refused password change, said in pt-BR, on the field to correct."""
    if exc.code == "wrong_password":
        return FormError("current", "Essa não é a sua senha atual.")
    if exc.code == "rate_limited":
        return FormError("current", "Muitas tentativas erradas: espere alguns minutos e tente"
                                    " de novo.")
    if exc.code == "same_password":
        return FormError("new", "A nova senha é a mesma de agora: escolha outra.")
    error = account_error_pt(exc, new)
    return FormError("new", error.message) if error.field == "password" else error


async def privacy_page(request: web.Request) -> web.Response:
    """What the house keeps about a player, how long, who sees it, and their rights (LGPD art.
    9): its figures are the code's own."""
    from server.live.recovery import SEAT_EVENTS_KEPT

    def days(span: timedelta) -> int:
        return round(span.total_seconds() / 86400)

    return render(request, "privacy.html", contact=request.app[CONFIG].privacy_contact,
                  session_days=days(accounts.SESSION_LIFETIME),
                  device_days=days(accounts.DEVICE_LIFETIME),
                  attempts_hours=round(accounts.ATTEMPTS_KEPT.total_seconds() / 3600),
                  registrations_hours=round(accounts.REGISTRATIONS_KEPT.total_seconds() / 3600),
                  seat_events_days=days(SEAT_EVENTS_KEPT))


def _envido_rows() -> list[tuple[str, str, int]]:
    """Every envido chain the engine allows, shortest first, with what quiero and no quiero give
    (`truco.envido`): (its calls, said; quiero, "a falta" once falta envido is in it; no quiero)."""
    from truco.actions import ActionKind
    from truco.envido import accepted_points, declined_points, next_calls

    said = {ActionKind.ENVIDO: "envido", ActionKind.REAL_ENVIDO: "real envido",
            ActionKind.FALTA_ENVIDO: "falta envido"}
    rows: list[tuple[str, str, int]] = []
    chains: list[tuple[ActionKind, ...]] = [(call,) for call in next_calls(())]
    while chains:
        chain = chains.pop(0)
        chains.extend((*chain, call) for call in next_calls(chain))
        quiero = ("a falta" if ActionKind.FALTA_ENVIDO in chain
                  else str(accepted_points(chain, (0, 0), 30)))
        rows.append((", ".join(said[call] for call in chain).capitalize(), quiero,
                     declined_points(chain, (0, 0), 30)))
    return rows


async def rules_page(request: web.Request) -> web.Response:
    """The rules the tables play, in pt-BR: every figure (ladders, targets, the special hands'
    worth, the partner signals, the clocks) from the engine's and the house's own settings."""
    from server.live.model import TableKind, abandon_limit
    from truco.signals import signals_for
    from truco.variants import RULES, Variant

    config = request.app[CONFIG]
    return render(
        request, "rules.html", rules={v.value: RULES[v] for v in Variant}, envido=_envido_rows(),
        signals={"brazilian": [f"“{s.label}”" for s in signals_for(Variant.PAULISTA)],
                 "argentine": [f"“{s.label}”" for s in signals_for(Variant.ARGENTINO)]},
        casual_s=round(config.clock_casual), ranked_s=round(config.clock_ranked),
        vote_s=round(config.vote_clock), absent_s=round(config.absent_delay),
        empty_s=round(config.empty_seat_cancel),
        casual_limit=abandon_limit(TableKind.TRAINING),
        ranked_limit=abandon_limit(TableKind.RANKED))


async def account_page(request: web.Request) -> web.Response:
    """The account page; after a form of it succeeded (a redirect, so that a reload does not
    post it again), `?feito=senha|sessoes&outras=N&sinal=...` says what was done: the password
    changed, or the other sessions ended, N of them (signed: `_done_mark`)."""
    if current_user(request) is None:
        return _login_wall(request)
    done, others = request.query.get("feito"), ascii_uint(request.query.get("outras"))
    if others is None or not hmac.compare_digest(
            request.query.get("sinal", ""), _done_mark(request, str(done), others)):
        # a link from anywhere could make the page say a password was changed (a review):
        # only the house's own redirect, signed for this account, says what was done
        return await _account(request)
    if done == "senha":
        return await _account(request, changed=True, ended_sessions=others)
    if done == "sessoes":
        return await _account(request, ended_others=others)
    return await _account(request)


def _done_mark(request: web.Request, done: str, others: int) -> str:
    """The signature of an account page's "what was done" (`_done_page`): this account's, by
    the house's cookie key."""
    user = current_user(request)
    assert user is not None
    message = f"account-done:{user.id}:{done}:{others}".encode()
    return hmac.new(request.app[CONFIG].cookie_key, message, hashlib.sha256).hexdigest()[:32]


def _done_page(request: web.Request, done: str, others: int) -> web.Response:
    """303 to the account page saying what a form of it did (a reload posts nothing again)."""
    return _redirect(f"/account?feito={done}&outras={others}"
                     f"&sinal={_done_mark(request, done, others)}")


async def _account(request: web.Request, *, status: int = 200,
                   headers: dict[str, str] | None = None, **context: Any) -> web.Response:
    """The account page; it says the account's newest password link, if any was ever made (a
    player sees that an operator reset their password, and when)."""
    user = current_user(request)
    assert user is not None
    link = await password_links.newest_of(request.app[POOL], user.id)
    sessions = await accounts.open_sessions(
        request.app[POOL], user.id, request_cookie(request, accounts.SESSION_COOKIE) or "")
    return render(request, "account.html", status=status, headers=headers, reset_link=link,
                  sessions=sessions, session_days=accounts.SESSION_LIFETIME.days,
                  when=local_time, **context)


async def erase_form(request: web.Request) -> web.Response:
    """"Apagar a conta" (LGPD art. 18, without asking the operators): the password proves it
    is the owner, a box says they know what stays. The account is anonymized as the command
    line does (`accounts.erase_account`); this browser is signed out, on the home page."""
    user = current_user(request)
    if user is None:
        return _login_wall(request)
    body = await read_body(request)
    errors: list[FormError] = []
    if body.get("confirm") != "sim":
        errors.append(FormError("erase-confirm", "Marque a caixa: ela diz o que fica e o que"
                                                 " não volta."))
    if errors:
        return await _account(request, status=400, errors=by_field(errors))
    try:
        erased = await erase_own_account(request, body.get("password"))
    except AccountError as exc:
        if exc.code == "account_busy":
            message = ("Ainda não dá para apagar a conta: ela está sentada numa mesa (ou é"
                       " dona de uma mesa não encerrada), na fila ranqueada, num convite de"
                       " dupla ou numa arena. Saia de tudo isso e tente de novo.")
            return await _account(request, status=409, errors=by_field(
                [FormError("erase-password", message)]))
        error = _password_error_pt(exc, None)
        return await _account(request, status=exc.status, headers=exc.headers(),
                              errors=by_field([FormError("erase-password", error.message)]))
    sign_out_request(request)
    page = render(request, "home.html", next="/",
                  notice=f"A sua conta foi apagada: agora ela se chama {erased}, sem senha, e"
                         " ninguém entra mais nela. O seu nome está livre.")
    accounts.del_cookie(page, accounts.SESSION_COOKIE, secure=request.app[CONFIG].secure_cookies)
    return page


async def sessions_form(request: web.Request) -> web.Response:
    """"Encerrar as outras sessões": every other session of the account ends; 303 to the page
    that says how many."""
    if current_user(request) is None:
        return _login_wall(request)
    return _done_page(request, "sessoes", await end_other_sessions(request))


async def password_form(request: web.Request) -> web.Response:
    user = current_user(request)
    if user is None:
        return _login_wall(request)
    body = await read_body(request)
    current, new = body.get("current"), body.get("new")
    # every field's problem at once, as on the sign-up form: the new password and its repeat
    # first (nothing to pay for), then, when either is wrong, the current password too (checked
    # as a login is, under its limits); nothing changes while any field is wrong
    errors: list[FormError] = []
    try:
        accounts.check_new_password(new, current, user.name)
    except AccountError as exc:
        errors.append(_password_error_pt(exc, new))
    if new != body.get("new2"):
        errors.append(FormError("new2", "As duas senhas novas não são iguais."))
    if errors:
        headers = None
        try:
            await accounts.check_current_password(request.app[POOL], user, current,
                                                  client_group(request),
                                                  request.app[PASSWORD_COST],
                                                  request_device(request))
            status = 400
        except AccountError as exc:
            errors.insert(0, _password_error_pt(exc, new))
            status, headers = exc.status, exc.headers()
        return await _account(request, status=status, headers=headers,
                              errors=by_field(errors))
    try:
        ended = await change_password(request, current, new)
    except AccountError as exc:
        return await _account(request, status=exc.status, headers=exc.headers(),
                              errors=by_field([_password_error_pt(exc, new)]))
    # the page that says so is another address (a reload does not post the form again, which
    # would now be refused: its "current" password is the old one)
    page = _done_page(request, "senha", ended)
    # the new password revoked every device cookie: this browser gets one for it
    await keep_device(request, page, user)
    return page


def local_time(moment: datetime, style: str = "seconds") -> markupsafe.Markup:
    """A moment on a player's page: said in UTC by the server, in the reader's own time zone by
    the page (forms.js, which keeps the UTC in the element's title). `style`: `seconds`
    (02/12/2026 11:20:05), `minutes` (02/12/2026 11:20) or `short` (02/12 11:20)."""
    moment = moment.astimezone(UTC)
    text = moment.strftime({"seconds": "%d/%m/%Y %H:%M:%S", "minutes": "%d/%m/%Y %H:%M",
                            "short": "%d/%m %H:%M"}[style]) + " UTC"
    return markupsafe.Markup('<time datetime="{}" data-local="{}">{}</time>').format(
        moment.strftime("%Y-%m-%dT%H:%M:%SZ"), style, text)


def setup(app: web.Application) -> None:
    app[JINJA] = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    app[JINJA].filters["decimal_pt"] = decimal_pt
    from server.live import HOUSE

    # every page's footer names the house's signing key (its id): what a player compares with
    # the fingerprint the operator publishes elsewhere before pinning it (docs/FAIRNESS.md, 9)
    app[JINJA].globals["house_key_id"] = app[HOUSE].key_id if HOUSE in app else None
    # the verifier to download, built once from the source this house runs
    app[VERIFIER_BUNDLE] = verifier_bytes = bundle.build()
    app[DOWNLOADED] = {}
    app[JINJA].globals.update(verifier_name=bundle.NAME,
                              verifier_sha256=bundle.digest(verifier_bytes),
                              verifier_kib=round(len(verifier_bytes) / 1024))
    app.router.add_get("/", home, name="home")
    app.router.add_post("/signup", signup_form, name="signup_form")
    app.router.add_post("/login", login_form, name="login_form")
    app.router.add_post("/logout", logout_form, name="logout_form")
    app.router.add_get("/t/{table}", table_page, name="table_page")
    app.router.add_get("/h/{table}/{hand}", hand_page, name="hand_page")
    app.router.add_get("/verify", verify_page, name="verify_page")
    app.router.add_get("/verificador", verifier_page, name="verifier_page")
    app.router.add_get(f"/downloads/{bundle.NAME}", verifier_download, name="verifier_download")
    app.router.add_get("/me/hands", my_hands, name="my_hands")
    app.router.add_get("/account", account_page, name="account_page")
    app.router.add_get("/privacidade", privacy_page, name="privacy_page")
    app.router.add_get("/regras", rules_page, name="rules_page")
    app.router.add_post("/account/password", password_form, name="password_form")
    app.router.add_get("/account/data", account_download, name="account_download")
    app.router.add_post("/account/sessions", sessions_form, name="sessions_form")
    app.router.add_post("/account/erase", erase_form, name="erase_form")
    # a refused form's page stays at its address: opened again, a GET goes to the form's page
    for path, page in (("/signup", "/"), ("/login", "/"), ("/logout", "/"),
                       ("/account/password", "/account"), ("/account/sessions", "/account"),
                       ("/account/erase", "/account")):
        app.router.add_get(path, back_to(page))
    app.router.add_static("/static/", STATIC_DIR, name="static", append_version=False)
