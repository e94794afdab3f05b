"""The pages of a forgotten password (server/password_links.py): the link a player opens to
choose a new password, and the operators' accounts page that makes such links. In pt-BR, real
HTML forms that work without JavaScript (docs/BROWSER.md)."""

from __future__ import annotations

import logging
from typing import Final

from aiohttp import web

from server import accounts, password_links
from server.accounts import AccountError
from server.app import (
    CONFIG,
    PASSWORD_COST,
    POOL,
    close_sessions_sockets,
    current_user,
    read_body,
    request_cookie,
    sign_out_request,
)
from server.config import origin_key
from server.pages import (
    FormError,
    _login_wall,
    account_error_pt,
    back_to,
    by_field,
    local_time,
    render,
)

log = logging.getLogger("barajamos.http")

# the newest links the operators' page lists
LISTED: Final = 50

REFUSED_PT: Final = {
    "link_unknown": "Este endereço não é um link de senha desta casa. Confira se ele foi"
                    " copiado inteiro, ou peça um novo a um operador.",
    "link_used": "Este link já foi usado: cada link serve uma vez só. Se você não sabe a senha"
                 " escolhida com ele, peça um novo a um operador.",
    "link_replaced": "Este link não vale mais: foi feito um mais novo para esta conta (só o"
                     " mais novo vale), ou ela passou a ser de um operador. Use o mais novo, ou"
                     " peça outro a um operador.",
    "link_expired": "Este link venceu (ele vale 24 horas). Peça um novo a um operador.",
    "link_operator": "Esta conta passou a ser de um operador depois que o link foi feito: a"
                     " senha dela só é refeita na máquina da casa.",
}

MAKE_REFUSED_PT: Final = {
    "no_such_account": "Nenhuma conta tem esse nome.",
    "operator_account": "Esta é uma conta de operador: a senha dela só é refeita na máquina da"
                        " casa, com o comando barajamos password-link.",
    "erased_account": "Esta conta foi apagada a pedido do dono: ninguém entra mais nela.",
}


def _refused(request: web.Request, exc: AccountError) -> web.Response:
    return render(request, "reset.html", status=exc.status, link_refused=REFUSED_PT[exc.code],
                  error=True, errors={})


async def reset_page(request: web.Request) -> web.Response:
    token = request.match_info["token"]
    link = await password_links.find(request.app[POOL], token)
    problem = password_links.refusal(link)
    if problem is not None:
        return _refused(request, problem)
    assert link is not None
    return render(request, "reset.html", link=link, when=local_time, errors={})


async def reset_form(request: web.Request) -> web.Response:
    token = request.match_info["token"]
    pool = request.app[POOL]
    body = await read_body(request)
    new = body.get("new")
    link = await password_links.find(pool, token)
    problem = password_links.refusal(link)
    if problem is not None:
        return _refused(request, problem)
    assert link is not None
    # every field's problem at once (the password, its repeat); nothing changes while any is
    errors: list[FormError] = []
    try:
        accounts.check_password(new, link.user_name)
    except AccountError as exc:
        errors.append(FormError("new", account_error_pt(exc, new).message))
    if new != body.get("new2"):
        errors.append(FormError("new2", "As duas senhas não são iguais."))
    if errors:
        return render(request, "reset.html", status=400, link=link, when=local_time,
                      errors=by_field(errors))
    try:
        user, ended = await password_links.use(pool, token, new, request.app[PASSWORD_COST])
    except AccountError as exc:  # used, replaced or expired while the password was hashed
        if exc.code in REFUSED_PT:
            return _refused(request, exc)
        raise
    ended_here = set(ended)
    await close_sessions_sockets(request.app, ended_here)
    log.info("password set by link", extra={
        "user": user.name, "link": link.id, "made_by": link.made_by or "command line",
        "ended_sessions": len(ended_here)})
    session = request_cookie(request, accounts.SESSION_COOKIE)
    signed_out = session is not None and accounts.token_hash(session) in ended_here
    if signed_out:
        sign_out_request(request)  # this browser was signed in to that account: not any more
    page = render(request, "reset.html", done=True, link=link, ended_sessions=len(ended_here),
                  errors={})
    if signed_out:
        accounts.del_cookie(page, accounts.SESSION_COOKIE,
                            secure=request.app[CONFIG].secure_cookies)
    return page


def _operator(request: web.Request) -> web.Response | None:
    user = current_user(request)
    if user is None:
        return _login_wall(request)
    if not user.is_operator:
        return render(request, "error.html", status=403, title="Somente operadores",
                      message="Esta página é da equipe de operação da casa.")
    return None


async def accounts_page(request: web.Request) -> web.Response:
    refused = _operator(request)
    if refused is not None:
        return refused
    links = await password_links.newest(request.app[POOL], LISTED)
    return render(request, "operator/accounts.html", links=links, when=local_time, errors={},
                  listed=LISTED)


async def make_link_form(request: web.Request) -> web.Response:
    refused = _operator(request)
    if refused is not None:
        return refused
    operator = current_user(request)
    assert operator is not None
    pool = request.app[POOL]
    name = (await read_body(request)).get("name")
    try:
        token, link = await password_links.make(pool, name, operator)
    except AccountError as exc:
        message = MAKE_REFUSED_PT.get(exc.code, "Dê o nome da conta.")
        if not isinstance(name, str) or not name.strip():
            message = "Dê o nome da conta."
        return render(request, "operator/accounts.html", status=exc.status,
                      links=await password_links.newest(pool, LISTED), when=local_time,
                      errors={"name": FormError("name", message)}, listed=LISTED,
                      name=name if isinstance(name, str) else "")
    log.info("password link made", extra={"user": link.user_name, "made_by": operator.name,
                                          "link": link.id})
    path = request.app.router["reset_page"].url_for(token=token)
    return render(request, "operator/accounts.html",
                  links=await password_links.newest(pool, LISTED), when=local_time, errors={},
                  made=link, listed=LISTED, url=_public_origin(request) + str(path))


def _public_origin(request: web.Request) -> str:
    """The house's address as the operator's browser reached it: the form's Origin (checked by
    the house's Origin check: this house, or one of `BARAJAMOS_ALLOWED_ORIGINS`), behind a
    proxy too; else the first allowed origin, else the address the request came to."""
    origin = request.headers.get("Origin")
    if origin is not None and origin_key(origin) is not None:
        return origin.rstrip("/")
    allowed = request.app[CONFIG].allowed_origins
    return allowed[0] if allowed else str(request.url.origin())


def setup(app: web.Application) -> None:
    r = app.router
    r.add_get(password_links.PATH + "{token}", reset_page, name="reset_page")
    r.add_post(password_links.PATH + "{token}", reset_form, name="reset_form")
    r.add_get("/operator/accounts", accounts_page, name="operator_accounts")
    r.add_post("/operator/accounts/link", make_link_form, name="operator_make_link")
    # a refused form's page stays at its address: opened again, a GET goes to the form's page
    r.add_get("/operator/accounts/link", back_to("/operator/accounts"))
