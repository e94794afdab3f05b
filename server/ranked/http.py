"""Ranked play over HTTP: the JSON API and the pt-BR pages.

Players: the queues (`/ranked`, `/api/ranked/queue`), their standing (`/me`,
`/api/me/standing`), one appeal per abandonment record, the leaderboards (`/leaderboard`) and
the arenas (`/arena`). Operators: the abandonment review queue with its filters, each record's
facts (with what the live house's rows of its match add), evidence timeline and decision form
(`/operator/abandonments`), the live records that carry no penalty, read only
(`/operator/abandonments?list=free`, `/operator/live-abandonments/{id}`: another numbering, each
record linked to the other), and the audit log (`/operator/audit`); the same under
`/api/ranked/operator/`. The views are thin: they parse,
call the service or the stores, and turn their stable error codes into HTTP errors (JSON) or a
message in pt-BR on the page (forms, which work without JavaScript).
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import quote, urlencode

from aiohttp import web
from markupsafe import Markup

from server.accounts import NAME_RE, User
from server.app import (
    CLOCK,
    CONFIG,
    POOL,
    ApiError,
    ascii_uint,
    current_user,
    read_body,
    require_operator,
    time_filter,
)
from server.app import require_user as api_require_user
from server.live.api import (
    find_abandonments,
    get_abandonment_row,
    live_link,
    restarts_spanned,
    review_link,
)
from server.live.model import TableKind, abandon_limit
from server.pages import _login_wall, back_to, decimal_pt, local_time, render
from server.ranked import arena_results, glicko2, ledger, ratings, review
from server.ranked.matchmaking import apart
from server.ranked.penalties import Decision, RecordStatus
from server.ranked.service import (
    INVITATION_LIFETIME,
    MAX_ARENA,
    MAX_ARENA_LEAD,
    QUEUE_PRESENCE,
    RANKED,
    ArenaEvent,
    News,
    NewsKind,
    QueueState,
    QueueStatus,
    RankedError,
    RankedService,
    hand_ids,
    loaded_evidence,
    queue_key,
)
from server.ranked.service import setup as setup_service
from server.ranked.store import Db, StoreError
from truco.variants import Variant

PAGE: Final = 50
_INT4: Final = 2**31 - 1
MAX_ARENA_LEAD_MINUTES: Final = int(MAX_ARENA_LEAD // 60)
MAX_ARENA_MINUTES: Final = int(MAX_ARENA // 60)
QUEUES: Final = tuple((v, s) for v in Variant for s in (2, 4))
VARIANT_PT: Final = {Variant.PAULISTA: "Paulista", Variant.MINEIRO: "Mineiro",
                     Variant.ARGENTINO: "Argentino"}
STATUS_PT: Final = {RecordStatus.PENDING: "Pendente", RecordStatus.UPHELD: "Mantido",
                    RecordStatus.OVERTURNED: "Revertido", RecordStatus.EXEMPT: "Isento"}
# the live house's rows name a variant by its value
LIVE_VARIANT_PT: Final = {v.value: name for v, name in VARIANT_PT.items()}
KIND_PT: Final = {"ranked": "Ranqueada", "arena": "Arena"}
# every table kind: the live records of abandonments without a penalty come from all of them
ALL_KINDS_PT: Final = {"private": "Privada", "training": "Treino", **KIND_PT}
EVIDENCE_PT: Final = {
    "deadline": "Prazo esgotado", "automatic": "Ação automática", "connected": "Conectou",
    "disconnected": "Desconectou", "acted": "Voltou a jogar",
    "back": "Disse que voltou",
    "server_restart": "Reinício do servidor", "server_fault": "Falha do servidor",
    "left": "Saiu da mesa",
    "exempt": "Isenção: registro sem penalidade",
}
TRIGGER_PT: Final = {"automatic_actions": "ações automáticas seguidas (prazos esgotados)",
                     "left": "saiu da mesa durante a partida"}
CONSEQUENCE_PT: Final = {"forfeit": "derrota por abandono (a partida terminou)",
                         "none_restart": "nenhuma: a sequência atravessou um reinício do "
                                         "servidor ou uma falha do banco de dados (zerada, a"
                                         " partida seguiu)"}
EXEMPT_PT: Final = {
    "server_restart": "a partida atravessou um reinício do servidor",
    "server_fault": "uma falha do servidor registrada tocou a partida",
    "arena_over": "a arena acabou com a mesa em jogo: a partida não contava",
}
AUDIT_PT: Final = {"created": "Registro criado", "appeal": "Recurso do jogador",
                   "uphold": "Mantido", "overturn": "Revertido"}
# the two lists of the operators' page: review records (ranked and arena, with a penalty and
# a decision), or the live house's records that carry no penalty (read only)
LISTS: Final = ("review", "free")
STATE_PT: Final = {
    QueueState.IDLE: "Fora da fila.",
    QueueState.INVITING: "Esperando a sua dupla entrar na fila com você.",
    QueueState.QUEUED: "Na fila, procurando adversários.",
    QueueState.PAIRED: ("Adversários encontrados. A mesa ainda não pode ser aberta: as mesas "
                        "ranqueadas ao vivo ainda não estão disponíveis nesta casa. Você continua "
                        "reservado até ela abrir ou até sair."),
    QueueState.SEATED: ("Sua partida começou: a mesa já está aberta e o relógio dela está "
                        "correndo (10 s por decisão)."),
}
# seconds between polls of the queue state by the queue page (its script, or without script a
# <noscript> reload) while its player waits for a table
QUEUE_PAGE_REFRESH: Final = 2
# seconds between polls (or, without script, reloads) of the arena page while its player is
# in an arena
ARENA_PAGE_REFRESH: Final = 3
WAITING_STATES: Final = frozenset({QueueState.INVITING, QueueState.QUEUED, QueueState.PAIRED})
PAIRED_OPENING_PT: Final = "Adversários encontrados: a mesa está sendo aberta."
# the stores' stable codes, said to players in pt-BR
ERROR_PT: Final = {
    "bad_queue": "Escolha uma variante e 1x1 ou 2x2.",
    "bad_partner": ("A dupla é outro jogador, pelo nome (de 3 a 24 letras sem acento, "
                    "algarismos, '.', '_' ou '-'), e só no 2x2."),
    "unknown_user": "Não existe jogador com esse nome.",
    "already_queued": "Você já está na fila ranqueada (ou numa mesa).",
    "not_queued": "Você não está na fila ranqueada.",
    "no_invitation": "Esse convite não existe mais (expirou, ou quem convidou desistiu dele).",
    "paused": "Você está suspenso da fila ranqueada e da arena por abandonos repetidos.",
    "partner_paused": ("A sua dupla está suspensa da fila ranqueada e da arena por abandonos "
                       "repetidos."),
    "partner_insufficient_chips": "A sua dupla não tem fichas suficientes para a aposta.",
    "partner_in_arena": ("A sua dupla está numa arena: ela não pode aceitar um convite para a "
                         "fila ranqueada antes de sair dela."),
    "crossed_invitation": ("Essa pessoa já convidou você para outra fila: aceite ou recuse o "
                           "convite dela (na lista de convites) antes de convidá-la."),
    "in_arena": "Você já está numa arena (ou numa mesa dela): saia dela antes.",
    "at_table": ("Você está jogando uma partida em outra mesa: termine-a ou saia dela antes de "
                 "entrar na fila ranqueada ou na arena."),
    "insufficient_chips": "Você não tem fichas suficientes para a aposta da ranqueada.",
    "bad_arena": "Dados da arena inválidos.",
    "unknown_arena": "Arena não encontrada.",
    "arena_closed": "Essa arena já terminou.",
    "closed": "Essa arena já terminou.",
    "already_joined": "Você já está nessa arena.",
    "not_joined": "Você não está nessa arena.",
    "bad_text": "Escreva o texto (de 1 a 2000 caracteres).",
    "already_appealed": "Este registro já teve o seu recurso.",
    "nothing_to_appeal": "Este registro não tem penalidade para contestar.",
    "forbidden": "Este registro não é seu.",
    "own_record": ("Este registro é um abandono seu: quem decide sobre ele é outro operador, "
                   "não você."),
    "not_found": "Registro não encontrado.",
    "already_overturned": "Este registro já foi revertido; a decisão é final.",
    "already_upheld": "Este registro já foi mantido e não tem recurso novo.",
    "exempt": ("Este registro é isento (a partida atravessou um reinício do servidor ou uma "
               "falha registrada): não há penalidade."),
    "stale": "O registro mudou desde que você abriu a página: leia de novo antes de decidir.",
    "bad_state": ("O formulário não traz o estado do registro desta página: recarregue a página"
                  " e decida de novo."),
    "bad_filter": "Filtro inválido.",
    "bad_decision": "Escolha manter ou reverter.",
    "unavailable": "As ranqueadas estão indisponíveis agora; tente de novo em instantes.",
}
_STATUS_BY_CODE: Final = {
    "not_found": 404, "unknown_arena": 404, "unknown_user": 404, "forbidden": 403,
    "own_record": 403,
    "already_queued": 409, "not_queued": 409, "no_invitation": 409, "paused": 409,
    "insufficient_chips": 409,
    "partner_paused": 409, "partner_insufficient_chips": 409, "partner_in_arena": 409,
    "crossed_invitation": 409, "in_arena": 409, "at_table": 409,
    "arena_closed": 409, "closed": 409, "already_joined": 409, "not_joined": 409,
    "already_appealed": 409, "nothing_to_appeal": 409, "already_overturned": 409,
    "already_upheld": 409, "exempt": 409, "conflict": 409, "stale": 409, "unavailable": 503,
}


def _api_error(exc: StoreError) -> ApiError:
    return ApiError(_STATUS_BY_CODE.get(exc.code, 400), exc.code, exc.message)


def _service(request: web.Request) -> RankedService:
    return request.app[RANKED]


def _pool(request: web.Request) -> Db:
    return request.app[POOL]


def _now(request: web.Request) -> datetime:
    return datetime.fromtimestamp(request.app[CLOCK].now(), UTC)


def _when(value: datetime | None) -> str:
    return "" if value is None else value.astimezone(UTC).strftime("%d/%m/%Y %H:%M:%S UTC")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _when_ms(at_ms: object) -> str:
    if not isinstance(at_ms, int) or isinstance(at_ms, bool):
        return ""
    moment = datetime.fromtimestamp(at_ms // 1000, UTC)
    return moment.strftime("%d/%m/%Y %H:%M:%S.") + f"{at_ms % 1000:03d} UTC"


def _duration_pt(seconds: float) -> str:
    seconds = math.ceil(max(0.0, seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


def _pause_pt(seconds: float) -> str:
    """A pause of the ladder (15 min doubling up to 24 h) as it is said: "15 min", "2 h"; what
    a player's page and the audit log both say."""
    whole = round(seconds)
    if whole and whole % 3600 == 0:
        return f"{whole // 3600} h"
    if whole and whole % 60 == 0:
        return f"{whole // 60} min"
    return _duration_pt(seconds)


def _int(value: object, what: str, default: int | None = None) -> int | None:
    if value is None or value == "":
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    # ASCII digits only ("²".isdigit() is true, but int() refuses it), at most 18 of them
    number = ascii_uint(value)
    if number is not None:
        return number
    if isinstance(value, str) and value.isascii() and value.isdigit():
        raise ApiError(400, "bad_filter", f"{what} is too large.")
    raise ApiError(400, "bad_filter", f"{what} must be a whole number.")


def _id(value: object, what: str) -> int | None:
    """A record id given as a filter or a page's cursor (`_int`); 0 names no record."""
    number = _int(value, what)
    if number == 0:
        raise ApiError(400, "bad_filter", f"{what} must be a record id (a whole number from 1).")
    return number


def _rounded(value: object) -> object:
    """A rating amount as every rating field shows it: 2 decimals (None stays None)."""
    return round(value, 2) if isinstance(value, float) else value


def _record_id(request: web.Request) -> int:
    record_id = ascii_uint(request.match_info["record"])
    if record_id is None or record_id == 0:
        raise ApiError(404, "not_found", "No abandonment record with that id.")
    return record_id


async def _user_by_name(db: Db, name: object) -> tuple[int, str] | None:
    """A user's id and name as stored, by a name in any case."""
    if not isinstance(name, str) or not name.strip():
        return None
    row = await db.fetchrow("SELECT id, name FROM users WHERE lower(name) = lower($1)",
                            name.strip())
    return None if row is None else (int(row["id"]), str(row["name"]))


async def _user_id_by_name(db: Db, name: object) -> int | None:
    user = await _user_by_name(db, name)
    return None if user is None else user[0]


async def _names(db: Db, ids: Iterable[int | None]) -> dict[int, str]:
    wanted = sorted({i for i in ids if i is not None})
    if not wanted:
        return {}
    rows = await db.fetch("SELECT id, name FROM users WHERE id = ANY($1::bigint[])", wanted)
    return {r["id"]: r["name"] for r in rows}


# --- JSON shapes -------------------------------------------------------------------------------


def _rating_json(rating: glicko2.Rating) -> dict[str, Any]:
    return {"rating": round(rating.rating, 2), "rd": round(rating.rd, 2),
            "volatility": round(rating.volatility, 6), "provisional": rating.provisional}


def _record_json(record: review.AbandonmentRecord, names: Mapping[int, str],
                 *, full: bool = False) -> dict[str, Any]:
    parts = record.match_ref.split(":")
    out: dict[str, Any] = {
        "id": record.id, "player": names.get(record.user_id), "user_id": record.user_id,
        "match": record.match_ref, "kind": parts[0] if len(parts) == 3 else None,
        "table": parts[1] if len(parts) == 3 else None,
        "variant": record.variant.value, "seats": record.seats,
        "match_started_at": record.match_started_at.isoformat(),
        "abandoned_at": record.abandoned_at.isoformat(), "status": record.status.value,
        "strikes": record.strikes,
        "paused_until": None if record.paused_until is None else record.paused_until.isoformat(),
        # the pause above is what the record set; an overturn lifted it (it no longer holds)
        "pause_lifted_at": record.reversed_at.isoformat()
        if record.paused_until is not None and record.reversed_at is not None else None,
        "appealed": record.appeal_text is not None, "appeal_answered": record.appeal_answered,
        # the state a decision names as `expected_state` (`pending:none`, `upheld:open`, ...):
        # it changes with every appeal and decision, and never comes back to an earlier value
        "review_state": record.review_state.token,
        "decided_at": None if record.decided_at is None else record.decided_at.isoformat(),
        "decided_by": names.get(record.decided_by) if record.decided_by else None,
    }
    if full:
        out |= {"appeal": record.appeal_text,
                "appealed_at": None if record.appealed_at is None
                else record.appealed_at.isoformat(),
                "evidence": [dict(e) for e in record.evidence],
                "hands": [f"/hands/{h}" for h in hand_ids(record)],
                "source": record.source_ref}
    return out


# the rating figures an audit row's `detail` may carry (an overturn's `rating_returned`): shown
# with 2 decimals, as every rating field; the stored detail keeps the exact value
_AUDIT_RATING_FIELDS: Final = frozenset({"rating_returned"})


def _audit_json(entry: review.AuditEntry) -> dict[str, Any]:
    detail = {k: _rounded(v) if k in _AUDIT_RATING_FIELDS else v
              for k, v in entry.detail.items()}
    return {"id": entry.id, "record": entry.record_id, "actor": entry.actor_name,
            "action": entry.action, "note": entry.note, "detail": detail,
            "at": entry.at.isoformat()}


def _arena_json(event: ArenaEvent, names: Mapping[int, str], now: float,
                user: int | None = None) -> dict[str, Any]:
    arena = event.arena
    state = ("closed" if arena.closed else "running" if arena.running(now)
             else "upcoming" if now < arena.starts_at else "ending")
    entrant = None if user is None else arena.entrant(user)
    waiting = sum(1 for e in arena.entrants if e.active and not e.busy)
    return {
        # the asking player: still paired in this arena, and the live table they play at now;
        # `left`: entered once and no longer paired (left it, abandoned a table, or never came
        # to one): joining again brings them back
        "joined": entrant is not None and entrant.active,
        "left": entrant is not None and not entrant.active,
        # why: `left`, `abandoned`, `absent` (never came to a table); null when not said (not
        # out, or out before the house kept why)
        "left_why": None if entrant is None or entrant.active else entrant.out or None,
        # players waiting to be paired, and tables in play, and that said to the asking player
        "waiting": waiting, "playing": len(event.tables),
        "now_text": _arena_now_pt(state, waiting, len(event.tables),
                                  entrant is not None and entrant.active,
                                  entrant is not None and entrant.busy),
        "table": None if user is None else event.table_of(user),
        "id": event.id, "variant": event.variant.value, "seats": arena.seats, "state": state,
        "starts_at": datetime.fromtimestamp(arena.starts_at, UTC).isoformat(),
        "ends_at": datetime.fromtimestamp(arena.ends_at, UTC).isoformat(),
        "standings": [
            {"rank": s.rank, "player": names.get(s.player), "points": s.points, "wins": s.wins,
             "games": s.games, "streak": s.streak, "on_fire": s.on_fire}
            for s in arena.standings()
        ],
        "podium": [names.get(s.player) for s in arena.podium],
    }


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _arena_now_pt(state: str, waiting: int, playing: int, joined: bool, busy: bool) -> str:
    """What is going on in an arena now, as its page says it to a player."""
    tables = _plural(playing, "mesa em jogo", "mesas em jogo")
    free = _plural(waiting, "jogador esperando mesa", "jogadores esperando mesa")
    if state == "upcoming":
        entered = _plural(waiting, "inscrito", "inscritos")
        return (f"Ainda não começou: {entered}. As mesas se formam no começo."
                + (" Você está inscrito: a sua primeira mesa abre sozinha." if joined else ""))
    if joined and not busy:
        return (f"Você está esperando a próxima mesa ({free} agora, você inclusive; "
                f"{tables}): ela abre sozinha nesta página.")
    return f"Agora: {free}, {tables}."


def _arena_place(service: RankedService, user: int) -> dict[str, Any] | None:
    """The arena that holds this player out of the queue (`RankedService.arena_of`), and
    their live table in it if any."""
    event = service.arena_of(user)
    if event is None:
        return None
    return {"id": event.id, "name": _queue_name(event.variant, event.arena.seats),
            "table": event.table_of(user)}


# --- what the pages and the API share ----------------------------------------------------------


def _queue_name(variant: Variant, seats: int) -> str:
    return f"{VARIANT_PT[variant]} {'1x1' if seats == 2 else '2x2'}"


def _range_notice(service: RankedService, user: int) -> str | None:
    """For a queued player, when nobody else waiting in the same queue is within the player's
    window (the rating gap the pairing accepts now): says so, and whether the window still
    grows. Only that: never another player's rating."""
    ticket = service.matchmaker.queued(user)
    if ticket is None:
        return None
    others = [t for t in service.matchmaker.tickets if t.key == ticket.key and t != ticket]
    if not others:
        return "Ninguém mais está nesta fila agora: a partida sai quando outros jogadores entrarem."
    # players of one address never meet (docs/RANKED.md): a room of a lan house queued together
    # saw "N esperando" and waited, never told why
    others = [t for t in others if apart(ticket, t, service.addresses)]
    if not others:
        return ("Quem mais espera nesta fila joga da mesma rede que você (o mesmo endereço), e a"
                " casa nunca junta numa partida ranqueada jogadores de um mesmo endereço: a"
                " partida sai quando entrar alguém de outra rede.")
    window = service.matchmaker.window
    width = window.width(service.clock.now() - ticket.joined_at)
    if any(abs(t.rating - ticket.rating) <= width for t in others):
        return None
    cap = round(window.cap)
    if width < window.cap:
        return (f"Ninguém na fila está na sua faixa de pontos agora; a faixa aumenta com a "
                f"espera, até {cap} pontos.")
    return (f"Ninguém na fila está na sua faixa de pontos, que já é a maior ({cap} pontos): a "
            "partida sai quando entrar alguém nessa faixa.")


async def _queue_view(request: web.Request, user: User) -> dict[str, Any]:
    service = _service(request)
    service.seen(user.id)  # the page (or client) asking is open: the ticket stays
    status = service.status(user.id)
    sizes = service.queue_sizes()
    now = service.clock.now()
    # duo invitations naming this player, still open: accepting is queueing with the inviter
    invitations = sorted((i for i in service.invitations.values()
                          if i.partner == user.id and now - i.at <= INVITATION_LIFETIME),
                         key=lambda i: (i.at, i.inviter))
    news = service.news_for(user.id)
    names = await _names(_pool(request), [status.partner, *status.seating,
                                          *(i.inviter for i in invitations),
                                          None if news is None else news.other])
    paused = (await review.pause_remaining(_pool(request), user.id, _now(request))
              ).total_seconds()
    message = (PAIRED_OPENING_PT if status.state is QueueState.PAIRED
               and service.launcher is not None else STATE_PT[status.state])
    arena = _arena_place(service, user.id) if status.state is QueueState.IDLE else None
    if status.state is QueueState.IDLE and paused > 0:
        message = ("Você está suspenso da fila ranqueada e da arena por abandonos repetidos: "
                   f"faltam {_duration_pt(paused)}.")
    elif arena is not None:
        # the queue refuses a player in an arena (`in_arena`): say where they are instead
        message = (f"Sua partida da arena ({arena['name']}) começou: o relógio da mesa está "
                   "correndo." if arena["table"] else
                   f"Você está na arena ({arena['name']}): a próxima partida dela abre "
                   "sozinha aqui ou na página da arena. Para entrar na fila ranqueada, saia "
                   "antes da arena.")
    expires = None
    notice = None
    if status.state is QueueState.INVITING:
        expires = max(0.0, INVITATION_LIFETIME - status.waited)
        notice = f"O convite expira em {_duration_pt(expires)}."
    elif status.state is QueueState.QUEUED:
        notice = _range_notice(service, user.id)
    return {
        "queue": status.to_json() | {
            # the rating gap the pairing accepts now: 2 decimals, as every rating field
            "window": _rounded(status.window),
            "partner": names.get(status.partner) if status.partner else None,
            "seating": [names.get(u) for u in status.seating],
            "message": message, "notice": notice,
            "expires_in_s": None if expires is None else round(expires, 3),
            "pause_remaining_s": round(paused, 3),
            # the arena that holds this player out of the queue, and its table in play
            "arena": arena,
            "news": None if news is None else {
                "kind": news.kind.value, "who": names.get(news.other),
                "text": _news_pt(news, names.get(news.other, "?"))},
            "invitations": [{
                "from": names.get(i.inviter), "variant": i.key.variant.value,
                "seats": i.key.seats,
                "expires_in_s": round(INVITATION_LIFETIME - (now - i.at), 3),
                "text": (f"{names.get(i.inviter)} convidou você para uma dupla "
                         f"({_queue_name(i.key.variant, i.key.seats)}); expira em "
                         f"{_duration_pt(INVITATION_LIFETIME - (now - i.at))}."),
            } for i in invitations],
        },
        "queues": [{"variant": key.variant.value, "seats": key.seats, "waiting": sizes[key]}
                   for key in sorted(sizes, key=lambda k: (k.variant.value, k.seats))],
        "stake": service.settings.stake,
        "launcher": service.launcher is not None,
    }


def _news_pt(news: News, who: str) -> str:
    minutes = round(QUEUE_PRESENCE / 60)
    return {
        NewsKind.DECLINED: f"{who} recusou o seu convite para jogar em dupla.",
        NewsKind.EXPIRED: (f"Seu convite para {who} jogar em dupla expirou: ficou "
                           f"{round(INVITATION_LIFETIME / 60)} min sem resposta."),
        NewsKind.PARTNER_LEFT: (f"{who}, da sua dupla, saiu da fila ranqueada, e a dupla saiu "
                                "junto: entre de novo na fila, sem dupla ou com outra."),
        NewsKind.TABLE_UNDONE: (f"{who} desistiu da mesa que tinha sido formada: você voltou à "
                                "fila, com o tempo de espera que já tinha."),
        NewsKind.AWAY: (f"Você foi retirado da fila: a página da fila ficou fechada por mais de "
                        f"{minutes} min (a fila precisa dela aberta para saber que você está "
                        "aí)."),
        NewsKind.PARTNER_AWAY: (f"{who}, da sua dupla, fechou a página da fila por mais de "
                                f"{minutes} min: a dupla saiu da fila. Entre de novo, sem dupla "
                                "ou com outra."),
        NewsKind.TAKEN: (f"{who} entrou na fila sem você (sem dupla ou com outra): o seu "
                         "convite foi desfeito."),
        NewsKind.BUSY: ("Você foi retirado da fila: quando a sua mesa ranqueada foi formada, "
                        "você estava jogando em outra mesa (ou não podia mais jogar a "
                        "ranqueada)."),
        NewsKind.COULD_NOT_PLAY: (f"{who} não pôde jogar a mesa que tinha sido formada (jogava "
                                  "em outra mesa, ou não podia mais jogar a ranqueada): você "
                                  "voltou à fila, com o tempo de espera que já tinha."),
        NewsKind.PARTNER_COULD_NOT: (f"{who}, da sua dupla, não pôde jogar a mesa que tinha "
                                     "sido formada (jogava em outra mesa, ou não podia mais "
                                     "jogar a ranqueada): a dupla saiu da fila. Entre de novo, "
                                     "sem dupla ou com outra."),
    }[news.kind]


async def _decline(request: web.Request, user: User, body: Mapping[str, Any]) -> str:
    """Decline the duo invitation of the player named `from` (a form's `partner`); their
    name as stored."""
    name = body.get("from", body.get("partner"))
    inviter = await _user_by_name(_pool(request), name) if (
        isinstance(name, str) and NAME_RE.fullmatch(name.strip())) else None
    if inviter is None:
        raise RankedError("no_invitation", "That player has not invited you.")
    await _service(request).decline(user.id, inviter[0])
    return inviter[1]  # (read before: nothing can fail after the decline is done)


async def _join_queue(request: web.Request, user: User, body: Mapping[str, Any]) -> QueueStatus:
    # a JSON body's seat count is a number (2 or 4); a form's is its text
    key = queue_key(body.get("variant"), body.get("seats"),
                    strings=request.content_type != "application/json")
    partner_name = body.get("partner")
    partner = None
    if isinstance(partner_name, str) and partner_name.strip():
        if not NAME_RE.fullmatch(partner_name.strip()):
            # no such name can exist (3 to 24 letters, digits, '.', '_', '-'): not echoed back
            raise RankedError("bad_partner", "The partner is a player's name (3 to 24 letters, "
                                             "digits, '.', '_' or '-').")
        partner = await _user_id_by_name(_pool(request), partner_name)
        if partner is None:
            raise RankedError("unknown_user", f"No player named {partner_name.strip()!r}.")
    elif partner_name not in (None, ""):
        raise RankedError("bad_partner", "The partner is a player's name.")
    return await _service(request).join(user.id, key, partner)


# `GET /api/me/standing?match=`: a ranked match's reference (`service.match_ref`)
_RANKED_MATCH = re.compile(r"ranked:[0-9a-f]{16}:[1-9][0-9]{0,8}")


async def _standing(request: web.Request, user: User,
                    match: str | None = None) -> dict[str, Any]:
    """What /me shows. `match`: its history and chip lines are that match's only (all of them,
    however old: the newest page may no longer hold them)."""
    db = _pool(request)
    now = _now(request)
    rows = await db.fetch(
        "SELECT variant, seats, rating, rd, volatility, games, last_played_at "
        "FROM ranked_ratings WHERE user_id = $1 ORDER BY variant, seats", user.id)
    queues = [{"variant": r["variant"], "seats": r["seats"], "games": r["games"],
               **_rating_json(glicko2.Rating(r["rating"], r["rd"], r["volatility"]))}
              for r in rows]
    history = await db.fetch(
        "SELECT id, variant, seats, reason, match_ref, rating_before, rating_after, rd_after, at "
        "FROM ranked_rating_history WHERE user_id = $1 AND ($3::text IS NULL OR match_ref = $3)"
        " ORDER BY id DESC LIMIT $2",
        user.id, PAGE, match)
    lines = [{"id": r["id"], "variant": r["variant"], "seats": r["seats"],
              "reason": r["reason"], "match": r["match_ref"],
              "before": round(r["rating_before"], 2), "after": round(r["rating_after"], 2),
              "delta": round(r["rating_after"] - r["rating_before"], 2),
              "rd": round(r["rd_after"], 2), "at": r["at"].isoformat()} for r in history]
    # one rating period per match and no draws: the rating rises exactly when the match is won
    # an overturned abandonment gives the match's points back in a later `reversal` row (newer,
    # so on this page whenever the match's row is): the match is marked annulled
    reversed_at = {h["match"]: h["at"] for h in lines if h["reason"] == "reversal"}
    matches = [{"match": h["match"], "variant": h["variant"], "seats": h["seats"],
                "won": h["delta"] > 0, "delta": h["delta"], "at": h["at"],
                "table": h["match"].split(":")[1] if h["match"].count(":") == 2 else None,
                "overturned": h["match"] in reversed_at,
                "overturned_at": reversed_at.get(h["match"])}
               for h in lines if h["reason"] == "match"]
    balance = await ledger.balance(db, user.id)
    statement = await ledger.statement(db, user.id, limit=PAGE, match_ref=match)
    started = await _match_starts(db, [s.match_ref for s in statement if s.match_ref])
    records = await review.list_records(db, user_id=user.id, limit=PAGE)
    paused = await review.pause_remaining(db, user.id, now)
    arenas = await arena_results.of_player(db, user.id, PAGE)
    return {
        "ratings": queues, "history": lines, "matches": matches,
        "chips": {"balance": balance, "ledger": [
            {"entry": s.entry_id, "reason": s.reason.value, "reference": s.reference,
             "match": s.match_ref, "amount": s.amount, "balance_after": s.balance_after,
             "at": s.created_at.isoformat()} | _match_json(s.match_ref, started)
            for s in statement]},
        "abandonments": await _my_records(db, user, records),
        "pause_remaining_s": paused.total_seconds(),
        # the closed arenas the player entered: where they finished (open ones are on /arena)
        "arenas": [{"id": a.arena_id, "variant": a.variant, "seats": a.seats,
                    "starts_at": a.starts_at.isoformat(), "ends_at": a.ends_at.isoformat(),
                    "rank": a.rank, "entrants": a.entrants, "points": a.points,
                    "wins": a.wins, "games": a.games, "podium": a.podium} for a in arenas],
    }


async def _match_starts(db: Db, match_refs: Iterable[str]) -> dict[str, datetime]:
    """When each of these matches (`<kind>:<table>:<number>`) started, from the live house."""
    wanted = {}
    for ref in match_refs:
        _, table, number = _match_parts(ref)
        if table is not None and number is not None:
            wanted[ref] = (table, number)
    if not wanted:
        return {}
    rows = await db.fetch("SELECT table_id, number, started_at FROM live_matches "
                          "WHERE table_id = ANY($1::text[])",
                          sorted({table for table, _ in wanted.values()}))
    started = {(r["table_id"], r["number"]): r["started_at"] for r in rows}
    return {ref: started[key] for ref, key in wanted.items() if key in started}


def _match_json(match_ref: str | None, started: Mapping[str, datetime]) -> dict[str, Any]:
    """A match named for people: its kind, table and start (None when unknown)."""
    kind, table, _ = _match_parts(match_ref or "")
    at = started.get(match_ref or "")
    return {"match_kind": kind, "match_table": table,
            "match_started_at": None if at is None else at.isoformat()}


def _trigger_of(record: review.AbandonmentRecord) -> str | None:
    """What made the abandonment, from the record's own evidence: the item that says it ended
    the match (a `left` item, or the streak's last missed `deadline`)."""
    for item in reversed(record.evidence):
        if item.get("abandonment") == "forfeit":
            if item.get("kind") == "left":
                return "left"
            if item.get("kind") == "deadline":
                return "automatic_actions"
    return None


async def _my_records(db: Db, user: User, records: tuple[review.AbandonmentRecord, ...]
                      ) -> list[dict[str, Any]]:
    """A player's own records, each with what it means for them, from what the house already
    keeps: what made it (the live house's record of the match, or the evidence), the hands the
    evidence names (their pages), what the lost match cost (chips, rating points: a result),
    the pause it set, and the operators' decisions with their notes and, for an overturn, what
    came back. Not who decided."""
    refs = [r.match_ref for r in records]
    tables = sorted({t for ref in refs if (t := _match_parts(ref)[1]) is not None})
    triggers = {(r["table_id"], r["match_number"]): r["trigger"] for r in await db.fetch(
        "SELECT DISTINCT ON (table_id, match_number) table_id, match_number, trigger "
        "FROM abandonments WHERE user_id = $1 AND consequence = 'forfeit' "
        "AND table_id = ANY($2::text[]) ORDER BY table_id, match_number, created_at DESC, id DESC",
        user.id, tables)} if tables else {}
    cost = {r["match_ref"]: r["delta"] for r in await db.fetch(
        "SELECT match_ref, rating_after - rating_before AS delta FROM ranked_rating_history "
        "WHERE user_id = $1 AND reason = 'match' AND match_ref = ANY($2::text[])",
        user.id, refs)}
    # the chips the match itself moved in the wallet (stake held, payout or refund), not the
    # reversal that may have given the stake back
    chips = {r["match_ref"]: r["net"] for r in await db.fetch(
        "SELECT e.match_ref, sum(l.amount)::bigint AS net FROM chip_entries e "
        "JOIN chip_lines l ON l.entry_id = e.id "
        "AND l.account_id = (SELECT id FROM chip_accounts WHERE code = $1) "
        "WHERE e.match_ref = ANY($2::text[]) AND e.reason <> 'reversal' "
        "GROUP BY e.match_ref", ledger.wallet(user.id), refs)}
    decided = await review.decisions(db, [r.id for r in records])
    out = []
    for record in records:
        _, table, number = _match_parts(record.match_ref)
        overturn = next((d for d in decided.get(record.id, ()) if d.action == "overturn"), None)
        lost = chips.get(record.match_ref)
        out.append(_record_json(record, {user.id: user.name}, full=True) | {
            "can_appeal": record.status.counts and record.appeal_text is None,
            "trigger": triggers.get((table, number)) or _trigger_of(record),
            # the hands' pages (`/h/<table>/<hand>`), where the signed records are checked
            "hand_pages": ["/h/" + "/".join(h.rsplit("-", 1)) for h in hand_ids(record)],
            "stake_lost": None if lost is None else max(0, -lost),
            "rating_change": None if (d := cost.get(record.match_ref)) is None else round(d, 2),
            "pause_s": 0 if record.paused_until is None
            else (record.paused_until - record.abandoned_at).total_seconds(),
            "decisions": [{"decision": d.action, "note": d.note, "at": d.at.isoformat()}
                          for d in decided.get(record.id, ())],
            "stake_returned": None if overturn is None
            else overturn.detail.get("chips_returned"),
            "rating_returned": None if overturn is None
            else _rounded(overturn.detail.get("rating_returned")),
        })
    return out




# what a filter of the list page takes, said next to the field when its value is refused
RANGE_FILTER_PT: Final = "A data final vem antes da inicial: troque as duas."
DATE_FILTER_PT: Final = ("Data inválida: use AAAA-MM-DD (o dia inteiro, em UTC) ou data e hora "
                         "AAAA-MM-DDTHH:MM (segundos e fuso opcionais, como 2025-03-01T18:30 "
                         "ou 2025-03-01T18:30-03:00; sem fuso, UTC), do ano 1 ao 9999.")
CHOICE_FILTER_PT: Final = "Valor desconhecido: escolha uma das opções da lista."
AUDIT_BEFORE_PT: Final = ("Essa página do registro de auditoria não existe (before= não é o "
                          "número de um evento): veja a primeira página, em /operator/audit.")
BEFORE_FILTER_PT: Final = ("Essa página da lista não existe (before= não é um número de "
                           "registro): veja a primeira página.")


class FilterError(ApiError):
    """A refused filter (400 `bad_filter`, the same JSON as before), naming its field: the list
    page shows the message next to that field and keeps every filter as it was typed."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(400, "bad_filter", message)
        self.field = field

    @property
    def pt(self) -> str:
        if self.field in ("since", "until"):
            if "before its start" in str(self.text):
                return RANGE_FILTER_PT
            return DATE_FILTER_PT
        return BEFORE_FILTER_PT if self.field == "before" else CHOICE_FILTER_PT


def _field(name: str, parse: Callable[[], Any]) -> Any:
    """`parse()`, its refusal turned into a `FilterError` of the field `name`."""
    try:
        return parse()
    except ApiError as exc:
        raise FilterError(name, exc.message) from None


@dataclass(frozen=True, slots=True)
class Filters:
    status: RecordStatus | None
    player: str
    variant: Variant | None
    seats: int | None
    kind: str | None
    appealed: bool | None
    appeal_open: bool
    since: datetime | None
    until: datetime | None
    before: int | None
    raw: Mapping[str, str]

    @classmethod
    def parse(cls, query: Mapping[str, str]) -> Filters:
        def choice(name: str, allowed: Iterable[str]) -> str | None:
            value = query.get(name, "")
            if value == "":
                return None
            if value not in set(allowed):
                raise FilterError(name, f"Unknown {name} {value!r}.")
            return value

        status = choice("status", [s.value for s in RecordStatus])
        variant = choice("variant", [v.value for v in Variant])
        seats = choice("seats", ["2", "4"])
        # `open`: an appeal still waiting for a decision (`yes` takes the answered ones too)
        appealed = choice("appealed", ["yes", "no", "open"])
        return cls(
            status=None if status is None else RecordStatus(status),
            player=query.get("player", "").strip(),
            variant=None if variant is None else Variant(variant),
            seats=None if seats is None else int(seats),
            kind=choice("kind", KIND_PT),
            appealed=None if appealed is None else appealed != "no",
            appeal_open=appealed == "open",
            since=_field("since", lambda: time_filter(query.get("since"), "since")),
            until=_field("until", lambda: time_filter(query.get("until"), "until", end=True)),
            before=_field("before", lambda: _id(query.get("before"), "before")),
            raw={k: v for k, v in query.items() if k != "before"},
        )._ordered()

    def _ordered(self) -> Filters:
        """A range that ends before it starts finds nothing, silently: refused instead."""
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise FilterError("until", "The end of the range comes before its start.")
        return self


async def _find_records(request: web.Request, filters: Filters
                        ) -> tuple[list[review.AbandonmentRecord], int | None]:
    """A page of review records, and the `before` of the next page (None: this is the last);
    one record more than the page is read to know whether another page follows."""
    db = _pool(request)
    user_id = None
    if filters.player:
        user_id = await _user_id_by_name(db, filters.player)
        if user_id is None:
            return [], None
    found = list(await review.list_records(
        db, status=filters.status, user_id=user_id, variant=filters.variant,
        seats=filters.seats, appealed=filters.appealed, since=filters.since,
        until=filters.until, limit=PAGE + 1, before_id=filters.before,
        match_prefix=filters.kind, appeal_open=filters.appeal_open))
    page = found[:PAGE]
    return page, page[-1].id if len(found) > PAGE else None


def _match_parts(match_ref: str) -> tuple[str | None, str | None, int | None]:
    """A match reference `<kind>:<table>:<number>` as (kind, table, number); Nones otherwise."""
    parts = match_ref.split(":")
    if len(parts) != 3:
        return None, None, None
    number = ascii_uint(parts[2])
    # live_matches.number is a PostgreSQL integer: a larger one names no match
    return parts[0], parts[1], number if number and number <= _INT4 else None


def _source_seat(source_ref: str | None) -> int | None:
    """The seat a review record's source names (`live:<table>:<match>:<seat>`)."""
    parts = (source_ref or "").split(":")
    if len(parts) == 4 and parts[0] == "live":
        seat = ascii_uint(parts[3])
        if seat is not None and seat < 4:
            return seat
    return None


async def _context(db: Db, record: review.AbandonmentRecord) -> dict[str, Any]:
    """What the review record's own row does not say, from the live house's rows of the same
    match (read, never copied: the live records stay the source): the live records of this
    player in the match (the forfeit the record was made from first among them), the seat,
    team and trigger, who else played, the hand the abandonment ended, and the server
    restarts and faults that explain an exemption."""
    kind, table, number = _match_parts(record.match_ref)
    seat = _source_seat(record.source_ref)
    live_rows: list[Any] = []
    players: list[int | None] = []
    ended_hand: int | None = None
    if table is not None and number is not None:
        live_rows = list(await db.fetch(
            "SELECT id, seat, team, trigger, consequence, restart_overlap, created_at "
            "FROM abandonments WHERE table_id = $1 AND match_number = $2 AND user_id = $3 "
            "ORDER BY created_at, id", table, number, record.user_id))
        started = await db.fetchval(
            "SELECT players FROM live_matches WHERE table_id = $1 AND number = $2",
            table, number)
        players = list(started) if started is not None else []
        ended_hand = await db.fetchval(
            "SELECT hand FROM live_hands WHERE table_id = $1 AND match_number = $2 "
            "AND record->>'end' = 'abandonment' ORDER BY hand DESC LIMIT 1", table, number)
    # the record was made from the forfeit that ended the match (there is one per match)
    source = next((r for r in reversed(live_rows) if r["consequence"] == "forfeit"
                   and (seat is None or r["seat"] == seat)), None)
    if seat is None and source is not None:
        seat = source["seat"]
    team = None if seat is None else seat % 2
    names = await _names(db, players)
    lineup = [{"seat": i, "team": i % 2, "player": names.get(u) if u else None,
               "user_id": u} for i, u in enumerate(players)]
    partner = opponents = None
    if seat is not None and len(players) == record.seats:
        opponents = [p["player"] for p in lineup if p["team"] != team]
        if record.seats == 4:
            partner = lineup[(seat + 2) % 4]["player"]
    # the server runs that began during the match (up to the abandonment): what exempts a
    # record made by the live house; said of every record (`match_spanned_restart`)
    restarts = await review.restarts_during(db, record.match_started_at, record.abandoned_at)
    # each live record's own flag says something else: its streak crossed a restart
    spanned = await restarts_spanned(db, [r["id"] for r in live_rows])
    faults: list[Any] = []
    reasons: list[str] = []
    if record.status is RecordStatus.EXEMPT:
        # why: the record's own `exempt` item says it (records made before it existed: the
        # restarts and faults inside the match, which is what exempted them)
        faults = list(await db.fetch(
            "SELECT id, kind, started_at, ended_at, note FROM server_faults "
            "WHERE started_at <= $2 AND (ended_at IS NULL OR ended_at >= $1) ORDER BY id",
            record.match_started_at, record.abandoned_at))
        stored = next((e for e in record.evidence if e.get("kind") == "exempt"), None)
        if stored is not None and isinstance(stored.get("reasons"), list):
            reasons = [str(r) for r in stored["reasons"]]
        else:
            reasons = (["server_restart"] if restarts else []) + (
                ["server_fault"] if faults else [])
    kinds = {e.get("kind") for e in record.evidence}
    return {
        "kind": kind, "table": table, "match_number": number, "seat": seat, "team": team,
        "trigger": None if source is None else source["trigger"],
        "consequence": None if source is None else source["consequence"],
        # the match outlived a server run: what exempts a record (a pending, upheld or
        # overturned record had none, or it would be exempt)
        "restart_overlap": "server_restart" in reasons,
        "match_spanned_restart": bool(restarts), "live_spanned": spanned,
        "source": source, "live_rows": live_rows, "lineup": lineup, "partner": partner,
        "opponents": opponents,
        # connection events cover the whole match: none at all is a player who never came
        "never_connected": (None if source is None
                            else not kinds & {"connected", "disconnected"}),
        "ended_hand": ended_hand, "restarts": restarts, "faults": faults,
        "exempt_reasons": reasons,
    }


async def _record_detail(request: web.Request, record_id: int) -> dict[str, Any]:
    db = _pool(request)
    record = await review.get_record(db, record_id)
    audit = await review.audit_log(db, record_id=record_id)
    cost = await db.fetchrow(
        "SELECT rating_before, rating_after FROM ranked_rating_history "
        "WHERE reference = $1 AND user_id = $2", f"match:{record.match_ref}", record.user_id)
    staked = await db.fetchval(
        "SELECT -l.amount FROM chip_entries e JOIN chip_lines l ON l.entry_id = e.id "
        "JOIN chip_accounts a ON a.id = l.account_id WHERE e.reference = $1 AND a.code = $2",
        f"hold:{record.match_ref}", ledger.wallet(record.user_id))
    names = await _names(db, [record.user_id, record.decided_by])
    context = await _context(db, record)
    reversal = next((a.detail for a in audit if a.action == "overturn"), None)
    hands = list(hand_ids(record))
    if context["table"] is not None and context["ended_hand"] is not None:
        ended = f"{context['table']}-{context['ended_hand']}"
        if ended not in hands:
            hands.append(ended)
        hands.sort(key=lambda h: int(h.rsplit("-", 1)[1]))
    return {
        "record": record, "audit": audit, "names": names, "stake": staked,
        "rating_change": None if cost is None else cost["rating_after"] - cost["rating_before"],
        "context": context, "hands": hands, "reversal": reversal,
        # an overturn lifts the record's pause (it stops counting); the pause it set stays
        # written as a fact of the record, and this says it no longer holds
        "pause_lifted_at": record.reversed_at if record.paused_until is not None else None,
    }


def _detail_json(detail: Mapping[str, Any]) -> dict[str, Any]:
    """A review record for operators: the record, what the live house's rows add, its links."""
    record: review.AbandonmentRecord = detail["record"]
    context = detail["context"]
    source = context["source"]
    reversal = detail["reversal"]
    lifted = detail["pause_lifted_at"]
    return _record_json(record, detail["names"], full=True) | {
        "hands": [f"/hands/{h}" for h in detail["hands"]],
        "ended_hand": (f"/hands/{context['table']}-{context['ended_hand']}"
                       if context["ended_hand"] is not None else None),
        "seat": context["seat"], "team": context["team"], "trigger": context["trigger"],
        "consequence": context["consequence"], "restart_overlap": context["restart_overlap"],
        "match_spanned_restart": context["match_spanned_restart"],
        "players": [{k: p[k] for k in ("seat", "team", "player")} for p in context["lineup"]],
        "partner": context["partner"], "opponents": context["opponents"],
        "never_connected": context["never_connected"],
        # the live house's records of this player in this match: its ids are another numbering
        "live": None if source is None else live_link(source["id"]),
        "live_records": [live_link(r["id"]) | {
            "trigger": r["trigger"], "consequence": r["consequence"],
            # `restart_overlap` here is the live record's: its streak crossed a restart
            "restart_overlap": r["restart_overlap"],
            "match_spanned_restart": r["id"] in context["live_spanned"],
            "created_at": r["created_at"].isoformat(),
            "source": source is not None and r["id"] == source["id"]}
            for r in context["live_rows"]],
        "exemption": None if record.status is not RecordStatus.EXEMPT else {
            "reasons": context["exempt_reasons"],
            "restarts": [{"run": r["run"], "at_ms": r["at_ms"],
                          "down_since_ms": r["down_since_ms"], "downtime_ms": r["downtime_ms"],
                          "clean_stop": r["clean_stop"]} for r in context["restarts"]],
            "faults": [{"id": f["id"], "kind": f["kind"],
                        "started_at": f["started_at"].isoformat(),
                        "ended_at": None if f["ended_at"] is None
                        else f["ended_at"].isoformat(), "note": f["note"]}
                       for f in context["faults"]],
            # no strike and no pause; the match itself was lost as any other forfeit
            "waives": ["strike", "pause"],
        },
        "pause_lifted_at": None if lifted is None else lifted.isoformat(),
        "stake": detail["stake"], "rating_change": _rounded(detail["rating_change"]),
        "stake_returned": None if reversal is None else reversal.get("chips_returned"),
        "rating_returned": None if reversal is None
        else _rounded(reversal.get("rating_returned")),
    }


# --- the API -----------------------------------------------------------------------------------


def _api(view: Callable[[web.Request], Awaitable[web.StreamResponse]]
         ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A JSON view whose store errors become `{"error", "message"}` with a fitting status."""
    async def wrapped(request: web.Request) -> web.StreamResponse:
        try:
            return await view(request)
        except StoreError as exc:
            raise _api_error(exc) from exc

    return wrapped


@_api
async def api_queue(request: web.Request) -> web.StreamResponse:
    return web.json_response(await _queue_view(request, api_require_user(request)))


@_api
async def api_join(request: web.Request) -> web.StreamResponse:
    user = api_require_user(request)
    await _join_queue(request, user, await read_body(request, ("variant", "seats", "partner")))
    return web.json_response(await _queue_view(request, user))


@_api
async def api_leave(request: web.Request) -> web.StreamResponse:
    user = api_require_user(request)
    await _service(request).leave(user.id)
    return web.json_response(await _queue_view(request, user))


@_api
async def api_decline(request: web.Request) -> web.StreamResponse:
    user = api_require_user(request)
    await _decline(request, user, await read_body(request, ("from", "partner")))
    return web.json_response(await _queue_view(request, user))


@_api
async def api_standing(request: web.Request) -> web.StreamResponse:
    user = api_require_user(request)
    match = request.query.get("match")
    if match is not None and not _RANKED_MATCH.fullmatch(match):
        raise RankedError("bad_match", "match is a ranked match's reference:"
                          " ranked:<table id>:<match number>.")
    return web.json_response(await _standing(request, user, match))


@_api
async def api_appeal(request: web.Request) -> web.StreamResponse:
    user = api_require_user(request)
    body = await read_body(request, ("text",))
    record = await review.appeal(_pool(request), _record_id(request), user.id, body.get("text"))
    return web.json_response({"abandonment": _record_json(record, {user.id: user.name},
                                                          full=True)})


async def _leaderboard(request: web.Request) -> tuple[Variant, int, int, list[dict[str, Any]]]:
    key = queue_key(request.query.get("variant", "paulista"), request.query.get("seats", "2"))
    offset = _int(request.query.get("offset"), "offset", 0)
    assert offset is not None
    rows = await ratings.leaderboard(_pool(request), key.variant, key.seats, limit=PAGE,
                                     offset=offset)
    return key.variant, key.seats, offset, [
        {"rank": offset + i, "player": s.name, "games": s.games, **_rating_json(s.rating)}
        for i, s in enumerate(rows, start=1)]


@_api
async def api_leaderboard(request: web.Request) -> web.StreamResponse:
    variant, seats, offset, rows = await _leaderboard(request)
    return web.json_response({"variant": variant.value, "seats": seats, "offset": offset,
                              "leaderboard": rows})


async def _arenas(request: web.Request, user: User) -> dict[str, Any]:
    service = _service(request)
    events = list(service.arenas.values())
    names = await _names(_pool(request), [e.player for ev in events for e in ev.arena.entrants])
    now = service.clock.now()
    live = [_arena_json(ev, names, now, user.id) for ev in events]
    recorded = await _pool(request).fetch(
        "SELECT id, variant, seats, starts_at, ends_at FROM arena_events "
        "ORDER BY closed_at DESC LIMIT 10")
    past = []
    for row in recorded:
        if row["id"] in service.arenas:
            continue
        results = await arena_results.results(_pool(request), row["id"])
        past.append({"id": row["id"], "variant": row["variant"], "seats": row["seats"],
                     "state": "closed", "joined": False, "table": None,
                     "starts_at": row["starts_at"].isoformat(),
                     "ends_at": row["ends_at"].isoformat(),
                     "standings": [{"rank": r.rank, "player": r.name, "points": r.points,
                                    "wins": r.wins, "games": r.games} for r in results],
                     "podium": [r.name for r in results if r.podium]})
    return {"arenas": live + past}


@_api
async def api_arenas(request: web.Request) -> web.StreamResponse:
    return web.json_response(await _arenas(request, api_require_user(request)))


# what the arena form's page says of each refused field, next to it
ARENA_FIELD_PT: Final = {
    "variant": "Escolha uma das variantes: Paulista, Mineiro ou Argentino.",
    "seats": "O formato é 1x1 ou 2x2.",
    "starts_in_minutes": (f"De 0 a {MAX_ARENA_LEAD_MINUTES} minutos (24 horas), "
                          "em número inteiro."),
    "minutes": f"De 1 a {MAX_ARENA_MINUTES} minutos (24 horas), em número inteiro.",
}


class ArenaFieldError(RankedError):
    """A refused field of a new arena (`field`: the form's name for it): `bad_arena`, or
    `bad_filter` for a form's field that is no whole number."""

    def __init__(self, field: str, message: str, code: str = "bad_arena") -> None:
        super().__init__(code, message)
        self.field = field


async def _create_arena(request: web.Request, body: Mapping[str, Any]) -> ArenaEvent:
    variant = body.get("variant")
    if not isinstance(variant, str) or variant not in set(Variant):
        raise ArenaFieldError("variant", "Unknown variant.")
    # a form's fields are text (400 `bad_filter` when not a whole number); in JSON each of these
    # is a number when given (`"2"`, `"30"`, `2.0`, `true`, `null`: 400 `bad_arena`)
    typed = request.content_type == "application/json"

    def number(name: str, default: int, what: str) -> int:
        if not typed:
            try:
                value = _int(body.get(name), name, default)
            except ApiError as exc:
                raise ArenaFieldError(name, exc.message, exc.error_code) from exc
            assert value is not None
            return value
        value = body.get(name, default)
        if type(value) is not int:
            raise ArenaFieldError(name, f"{name} is {what} (a number).")
        return value

    seats = number("seats", 2, "2 or 4")
    starts_in = number("starts_in_minutes", 0, f"0 to {MAX_ARENA_LEAD_MINUTES}")
    minutes = number("minutes", 60, f"1 to {MAX_ARENA_MINUTES}")
    if seats not in (2, 4):
        raise ArenaFieldError("seats", "Arena tables have 2 or 4 seats.")
    if not 0 <= starts_in <= MAX_ARENA_LEAD_MINUTES:
        raise ArenaFieldError("starts_in_minutes", "An arena starts within "
                              f"{MAX_ARENA_LEAD_MINUTES} minutes (24 hours).")
    if not 0 < minutes <= MAX_ARENA_MINUTES:
        raise ArenaFieldError("minutes", "An arena lasts more than 0 and at most "
                              f"{MAX_ARENA_MINUTES} minutes (24 hours).")
    now = _service(request).clock.now()
    begin = now + 60 * starts_in
    return await _service(request).create_arena(Variant(variant), seats, begin,
                                                begin + 60 * minutes)


@_api
async def api_create_arena(request: web.Request) -> web.StreamResponse:
    require_operator(request)
    event = await _create_arena(request, await read_body(
        request, ("variant", "seats", "starts_in_minutes", "minutes")))
    return web.json_response({"arena": _arena_json(event, {}, _service(request).clock.now())},
                             status=201)


@_api
async def api_end_arena(request: web.Request) -> web.StreamResponse:
    operator = require_operator(request)
    service = _service(request)
    event = await service.end_arena(request.match_info["arena"], operator.id)
    names = await _names(_pool(request), [e.player for e in event.arena.entrants])
    return web.json_response({"arena": _arena_json(event, names, service.clock.now())})


async def arena_end_form(request: web.Request) -> web.StreamResponse:
    checked = _page_operator(request, "/arena")
    if isinstance(checked, web.Response):
        return checked
    try:
        await _service(request).end_arena(request.match_info["arena"], checked.id)
    except StoreError as exc:
        return await arena_page(request, error=_pt(exc), status=_status_of(exc))
    return _see_other("/arena")


def _arena_action(join: bool) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    @_api
    async def view(request: web.Request) -> web.StreamResponse:
        user = api_require_user(request)
        service = _service(request)
        act = service.join_arena if join else service.leave_arena
        event = await act(user.id, request.match_info["arena"])
        names = await _names(_pool(request), [e.player for e in event.arena.entrants])
        return web.json_response({"arena": _arena_json(event, names, service.clock.now(),
                                                       user.id)})

    return view


@_api
async def api_records(request: web.Request) -> web.StreamResponse:
    require_operator(request)
    records, after = await _find_records(request, Filters.parse(request.query))
    names = await _names(_pool(request), [r.user_id for r in records]
                         + [r.decided_by for r in records])
    # `next`: the `before` of the next page, with the same filters; null on the last page
    return web.json_response({"abandonments": [_record_json(r, names) for r in records],
                              "next": after})


@_api
async def api_record(request: web.Request) -> web.StreamResponse:
    require_operator(request)
    detail = await _record_detail(request, _record_id(request))
    return web.json_response({"abandonment": _detail_json(detail),
                              "audit": [_audit_json(a) for a in detail["audit"]]})


def _decision(value: object) -> Decision:
    if not isinstance(value, str) or value not in set(Decision):
        raise RankedError("bad_decision", "The decision is 'uphold' or 'overturn'.")
    return Decision(value)


@_api
async def api_decide(request: web.Request) -> web.StreamResponse:
    operator = require_operator(request)
    body = await read_body(request, ("decision", "note", "expected_state"))
    # `expected_state` (optional): the record's `review_state` as the client read it; a record
    # that changed since (an appeal, another decision) is refused 409 `stale`
    record = await review.decide(_pool(request), _record_id(request), operator.id,
                                 _decision(body.get("decision")), body.get("note"),
                                 body.get("expected_state"))
    detail = await _record_detail(request, record.id)
    return web.json_response({"abandonment": _detail_json(detail),
                              "audit": [_audit_json(a) for a in detail["audit"][:1]]})


@_api
async def api_audit(request: web.Request) -> web.StreamResponse:
    require_operator(request)
    entries = await review.audit_log(
        _pool(request), record_id=_id(request.query.get("record"), "record"),
        before_id=_id(request.query.get("before"), "before"), limit=PAGE + 1)
    page = entries[:PAGE]
    return web.json_response({"audit": [_audit_json(a) for a in page],
                              "next": page[-1].id if len(entries) > PAGE else None})


# --- the pages ---------------------------------------------------------------------------------


class _SignInFirst(Exception):
    """A page asked for without a session: `_signed_in` answers the login wall."""


def _signed_in(view: Callable[[web.Request], Awaitable[web.StreamResponse]]
               ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A page that needs a login answers, without one, as `/me/hands` does: 401 with the log-in
    form saying so, which comes back to this page (its whole address) after the login."""
    async def wrapped(request: web.Request) -> web.StreamResponse:
        try:
            return await view(request)
        except _SignInFirst:
            return _login_wall(request)

    return wrapped


def _page_user(request: web.Request, back: str | None = None) -> User:
    """The signed-in user, or the login wall (`_signed_in`) for a page. A form's POST is
    redirected to the login page, whose `next` is `back`, the page the form is on (the login
    answers with a GET of `next`: a POST address there is a 405)."""
    user = current_user(request)
    if user is None:
        if request.method in ("GET", "HEAD"):
            raise _SignInFirst()
        # the whole path and query is one parameter's value: its "&", "=" and "?" encoded too,
        # or "/operator/abandonments?player=a&variant=b" comes back cut at the "&"
        raise web.HTTPSeeOther("/?next=" + quote(back or "/", safe="/"))
    return user


def _page_operator(request: web.Request, back: str | None = None) -> User | web.Response:
    user = _page_user(request, back)
    if not user.is_operator:
        return render(request, "error.html", status=403, title="Somente operadores",
                      message="Esta página é da equipe de operação da casa.")
    return user


def _pt(exc: StoreError | ApiError) -> str:
    code = exc.code if isinstance(exc, StoreError) else "bad_filter"
    return ERROR_PT.get(code, "Não foi possível concluir o pedido.")


def _status_of(exc: StoreError) -> int:
    return _STATUS_BY_CODE.get(exc.code, 400)


def _see_other(location: str) -> web.Response:
    return web.Response(status=303, headers={"Location": location})


def _queue_context(view: Mapping[str, Any]) -> dict[str, Any]:
    queue = view["queue"]
    waited = queue["waited_s"]
    state = QueueState(queue["state"])
    return {"queue": queue, "queues": view["queues"], "stake": view["stake"],
            "waited": _duration_pt(waited), "variants": VARIANT_PT, "state": state,
            # the page script polls the queue's state while the player waits (and, less
            # often, while out of the queue: an invitation, the end of a pause); without
            # script a <noscript> reload does it while waiting
            "waiting": state in WAITING_STATES or queue["arena"] is not None,
            "refresh": QUEUE_PAGE_REFRESH, "paused": queue["pause_remaining_s"] > 0,
            "presence_minutes": round(QUEUE_PRESENCE / 60)}


# the join form's refusals that are about the partner field (shown next to it)
PARTNER_ERRORS: Final = frozenset({"unknown_user", "bad_partner", "partner_paused",
                                   "partner_insufficient_chips", "partner_in_arena",
                                   "crossed_invitation"})


async def _refusal_pt(request: web.Request, user: User, exc: StoreError) -> str:
    """A refusal in pt-BR; a pause says how long it still lasts."""
    text = _pt(exc)
    if exc.code == "paused":
        left = await review.pause_remaining(_pool(request), user.id, _now(request))
        text = f"{text.removesuffix('.')}: faltam {_duration_pt(left.total_seconds())}."
    if exc.code == "at_table":
        # the match in the way, linked (the page named no table: the player had to find it)
        table = await _pool(request).fetchval(
            "SELECT t.id FROM live_seats s JOIN live_tables t ON t.id = s.table_id"
            " WHERE s.user_id = $1 AND t.status = 'playing' ORDER BY t.id LIMIT 1", user.id)
        if table is not None:
            return Markup('{} <a href="/t/{}" id="queue-error-table">Ir para essa mesa</a>.'
                          ).format(text, table)
    return text


async def ranked_page(request: web.Request, *, error: str | None = None,
                      status: int = 200, form: Mapping[str, str] | None = None,
                      error_field: str | None = None) -> web.Response:
    user = _page_user(request)
    view = await _queue_view(request, user)
    # the decline form's redirect names the inviter: said only if this player did decline them
    declined = request.query.get("declined", "")
    if declined and NAME_RE.fullmatch(declined):
        inviter = await _user_id_by_name(_pool(request), declined)
        if (inviter is None or not _service(request).declined_lately(user.id, inviter)
                or any(i["from"] == declined for i in view["queue"]["invitations"])):
            declined = ""  # (invited again since: that is what the page shows)
    else:
        declined = ""
    config = request.app[CONFIG]
    return render(request, "ranked/queue.html", status=status, error=error,
                  error_field=error_field, form=form or {}, declined=declined,
                  # what the lead says of the clocks (a new player met a 10 s clock untold)
                  clock_s=round(config.clock_ranked), casual_clock_s=round(config.clock_casual),
                  abandon_after=abandon_limit(TableKind.RANKED), **_queue_context(view))


async def ranked_join_form(request: web.Request) -> web.Response:
    user = _page_user(request, "/ranked")
    body = await read_body(request)
    try:
        await _join_queue(request, user, body)
    except StoreError as exc:
        # the form comes back as it was typed, the error next to the field it is about
        form = {k: v for k in ("variant", "seats", "partner")
                if isinstance(v := body.get(k), str)}
        return await ranked_page(request, error=await _refusal_pt(request, user, exc),
                                 status=_status_of(exc), form=form,
                                 error_field="partner" if exc.code in PARTNER_ERRORS else None)
    return _see_other("/ranked")


async def ranked_decline_form(request: web.Request) -> web.Response:
    user = _page_user(request, "/ranked")
    try:
        inviter = await _decline(request, user, await read_body(request))
    except StoreError as exc:
        return await ranked_page(request, error=_pt(exc), status=_status_of(exc))
    # the page confirms it while the service remembers this decline (`declined_lately`)
    return _see_other("/ranked?" + urlencode({"declined": inviter}))


async def ranked_leave_form(request: web.Request) -> web.Response:
    user = _page_user(request, "/ranked")
    try:
        await _service(request).leave(user.id)
    except StoreError as exc:
        return await ranked_page(request, error=_pt(exc), status=_status_of(exc))
    return _see_other("/ranked")


def _me_context(standing: Mapping[str, Any]) -> dict[str, Any]:
    def iso(text: str) -> Markup:
        return local_time(datetime.fromisoformat(text))

    def short(text: str) -> Markup:
        return local_time(datetime.fromisoformat(text), "short")

    return {
        "standing": standing, "variants": {v.value: name for v, name in VARIANT_PT.items()},
        "statuses": {s.value: name for s, name in STATUS_PT.items()},
        "when": iso, "short": short, "duration": _pause_pt,
        "pause": _duration_pt(standing["pause_remaining_s"]),
        # the live house's rule at ranked and arena tables (RULES.md, Clocks)
        "automatic_limit": abandon_limit(TableKind.RANKED),
    }


async def me_page(request: web.Request, *, error: str | None = None, error_record: int = 0,
                  status: int = 200, appeal: str = "") -> web.Response:
    user = _page_user(request)
    standing = await _standing(request, user)
    # the appeal form's redirect names the record appealed: confirmed there only while that
    # record shows an appeal (the address alone never claims one)
    appealed = ascii_uint(request.query.get("appealed") or "")
    return render(request, "ranked/me.html", status=status, error=error,
                  error_record=error_record, appeal=appeal, appealed=appealed,
                  **_me_context(standing))


async def appeal_form(request: web.Request) -> web.Response:
    user = _page_user(request, "/me")
    try:
        record_id = _record_id(request)
    except ApiError:
        # an id that is no number: as a number no record has, the page says so
        return await me_page(request, error=ERROR_PT["not_found"], status=404)
    body = await read_body(request)
    try:
        await review.appeal(_pool(request), record_id, user.id, body.get("text"))
    except StoreError as exc:
        # the appeal typed comes back in its box: one appeal per record, not to be typed again
        text = body.get("text")
        return await me_page(request, error=_pt(exc), error_record=record_id,
                             status=_status_of(exc), appeal=text if isinstance(text, str) else "")
    return _see_other(f"/me?appealed={record_id}#record-{record_id}")


async def leaderboard_page(request: web.Request) -> web.Response:
    try:
        variant, seats, offset, rows = await _leaderboard(request)
    except (StoreError, ApiError) as exc:
        return render(request, "error.html", status=400, title="Classificação",
                      message=_pt(exc))
    return render(request, "ranked/leaderboard.html", rows=rows, variant=variant.value,
                  seats=seats, offset=offset, page=PAGE, queues=QUEUES,
                  variants={v.value: name for v, name in VARIANT_PT.items()})


async def arena_page(request: web.Request, *, error: str | None = None,
                     status: int = 200, form: Mapping[str, Any] | None = None,
                     form_errors: Mapping[str, str] | None = None) -> web.Response:
    """The arenas; for an operator whose new arena was refused, the form as it was sent
    (`form`), with what each refused field takes next to it (`form_errors`)."""
    user = _page_user(request)
    data = await _arenas(request, user)
    for event in data["arenas"]:
        event["starts"] = local_time(datetime.fromisoformat(event["starts_at"]), "minutes")
        event["ends"] = local_time(datetime.fromisoformat(event["ends_at"]), "minutes")
    # the player's table now, and whether the page should follow the arena: it polls (or,
    # without script, reloads) while the player is in an arena that has not closed
    table = next((e["table"] for e in data["arenas"] if e["table"]), None)
    following = table is not None or any(e["joined"] and e["state"] != "closed"
                                         for e in data["arenas"])
    # with script, the page also follows the arenas of anyone watching (their standings, their
    # start and end) while one has not closed
    watching = following or any(e["state"] != "closed" for e in data["arenas"])
    # a pause hides the join forms and says how long it lasts, as /ranked does
    paused = (await review.pause_remaining(_pool(request), user.id, _now(request))
              ).total_seconds()
    return render(request, "ranked/arena.html", status=status, error=error,
                  arenas=data["arenas"], variants={v.value: n for v, n in VARIANT_PT.items()},
                  my_table=table, following=following, watching=watching,
                  refresh=ARENA_PAGE_REFRESH,
                  pause=_duration_pt(paused) if paused > 0 else None,
                  form={k: str(v) for k, v in (form or {}).items() if k != "csrf"},
                  form_errors=form_errors or {})


def _arena_form(join: bool) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def view(request: web.Request) -> web.StreamResponse:
        user = _page_user(request, "/arena")
        service = _service(request)
        act = service.join_arena if join else service.leave_arena
        try:
            await act(user.id, request.match_info["arena"])
        except StoreError as exc:
            return await arena_page(request, error=await _refusal_pt(request, user, exc),
                                    status=_status_of(exc))
        return _see_other("/arena")

    return view


# A refused form's page stays at the form's address: opened again (Enter in the address bar, a
# restored tab) it is a GET, answered with the page the form is on instead of a 405 in JSON
# (`back_to`); the decision's page is the record's own.
async def _decision_back(request: web.Request) -> web.StreamResponse:
    record = ascii_uint(request.match_info["record"])
    return _see_other(f"/operator/abandonments/{record}" if record else "/operator/abandonments")


async def arena_create_form(request: web.Request) -> web.StreamResponse:
    checked = _page_operator(request, "/arena")
    if isinstance(checked, web.Response):
        return checked
    body = await read_body(request)
    try:
        await _create_arena(request, body)
    except (StoreError, ApiError) as exc:
        # the refused field is said next to it, and the form keeps what was sent
        if isinstance(exc, ArenaFieldError):
            return await arena_page(request, error=ERROR_PT["bad_arena"], status=400,
                                    form=body, form_errors={exc.field: ARENA_FIELD_PT[exc.field]})
        return await arena_page(request, error=_pt(exc) if isinstance(exc, StoreError)
                                else ERROR_PT["bad_arena"], status=400, form=body)
    return _see_other("/arena")


async def _list_triggers(db: Db, records: Iterable[review.AbandonmentRecord]
                        ) -> dict[int, str | None]:
    """How each listed record's player abandoned (`automatic_actions`, `left`): the live
    house's forfeit of that player in that match, else the record's own evidence."""
    records = list(records)
    matches = {r.id: _match_parts(r.match_ref) for r in records}
    tables = sorted({t for _, t, _ in matches.values() if t is not None})
    found = {(r["table_id"], r["match_number"], r["user_id"]): r["trigger"] for r in await db.fetch(
        "SELECT DISTINCT ON (table_id, match_number, user_id) table_id, match_number, user_id, "
        "trigger FROM abandonments WHERE consequence = 'forfeit' AND table_id = ANY($1::text[]) "
        "ORDER BY table_id, match_number, user_id, created_at DESC, id DESC", tables)
    } if tables else {}
    return {r.id: found.get((matches[r.id][1], matches[r.id][2], r.user_id)) or _trigger_of(r)
            for r in records}


def _list_page(request: web.Request, *, listing: str, status: int = 200,
               records: Iterable[review.AbandonmentRecord] = (),
               names: Mapping[int, str] | None = None, live: Iterable[Any] = (),
               more: str | None = None, only_free: bool = False, player_unknown: bool = False,
               triggers_of: Mapping[int, str | None] | None = None,
               errors: Mapping[str, str] | None = None) -> web.Response:
    """The list page, with the filters as they were asked for (a refused one too: `errors`
    says, by field, what it takes, next to it)."""
    # a later page links back to the newest records (with the same filters)
    kept = {k: v for k, v in request.query.items() if k != "before"}
    newest = ("?" + urlencode(kept) if kept else "") if "before" in request.query else None
    return render(request, "operator/abandonments.html", status=status, records=list(records),
                  names=names or {}, listing=listing, live=list(live), more=more,
                  newest=newest,
                  filters={k: v for k, v in request.query.items() if k != "before"},
                  when=_when, statuses=STATUS_PT, variants=VARIANT_PT, kinds=ALL_KINDS_PT,
                  only_free=only_free, live_variants=LIVE_VARIANT_PT, triggers=TRIGGER_PT,
                  player_unknown=player_unknown, triggers_of=triggers_of or {},
                  errors=errors or {})


def _filters_error(request: web.Request, listing: str, exc: FilterError) -> web.Response:
    """A refused filter: the list page again, empty, with every filter kept and the refusal
    said at its field (400), not an error page that loses them."""
    return _list_page(request, listing=listing, status=400, errors={exc.field: exc.pt})


async def records_page(request: web.Request) -> web.StreamResponse:
    checked = _page_operator(request)
    if isinstance(checked, web.Response):
        return checked
    listing = request.query.get("list") or "review"
    if listing not in LISTS:
        return _filters_error(request, "review", FilterError("list", "Unknown list."))
    if listing == "free":
        return await _free_records_page(request)
    kind = request.query.get("kind", "")
    query = dict(request.query)
    only_free = kind in ALL_KINDS_PT and kind not in KIND_PT
    if only_free:
        query["kind"] = ""  # checked below: no review record is of that kind
    try:
        filters = Filters.parse(query)
    except FilterError as exc:
        return _filters_error(request, listing, exc)
    records, after = ([], None) if only_free else await _find_records(request, filters)
    names = await _names(_pool(request), [r.user_id for r in records])
    more = None
    if after is not None:
        more = "?" + urlencode({**request.query, "before": str(after)})
    return _list_page(
        request, listing=listing, records=records, names=names, more=more,
        only_free=only_free, triggers_of=await _list_triggers(_pool(request), records),
        player_unknown=bool(filters.player and not records
                            and await _user_id_by_name(_pool(request), filters.player) is None))


async def _free_records_page(request: web.Request) -> web.Response:
    """The live house's abandonment records that carry no penalty (private and training tables,
    and those a server restart exempted): listed read only, with the same filters (situation
    and appeal are the review's: they do not apply)."""
    query = request.query
    try:
        filters = Filters.parse({k: v for k, v in query.items()
                                 if k not in ("status", "appealed", "seats", "kind")})
        kind = query.get("kind") or None
        if kind is not None and kind not in ALL_KINDS_PT:
            raise FilterError("kind", f"Unknown kind {kind!r}.")
    except FilterError as exc:
        return _filters_error(request, "free", exc)
    rows = await find_abandonments(
        _pool(request), player=filters.player or None,
        variant=None if filters.variant is None else filters.variant.value, kind=kind,
        since=filters.since, until=filters.until, penalty_free=True, before=filters.before,
        limit=PAGE + 1)
    more = None
    if len(rows) > PAGE:
        rows = rows[:PAGE]
        more = "?" + urlencode({**query, "before": str(rows[-1]["id"])})
    return _list_page(
        request, listing="free", live=rows, more=more,
        player_unknown=bool(filters.player and not rows and await _user_id_by_name(
            _pool(request), filters.player) is None))


def _late_ms(event: Mapping[str, Any], deadlines: Mapping[int, int]) -> int | None:
    """How late an automatic action came, from the very instants the timeline shows: its
    `at_ms` and its deadline's `deadline_ms` (an older item names no deadline: the deadline
    item written at the same instant does), else the item's own `late_ms`."""
    at_ms, deadline = event.get("at_ms"), event.get("deadline_ms")
    if isinstance(at_ms, int) and not isinstance(at_ms, bool):
        if not _is_int(deadline):
            deadline = deadlines.get(at_ms)
        if isinstance(deadline, int) and not isinstance(deadline, bool):
            return at_ms - deadline
    late = event.get("late_ms")
    return late if isinstance(late, int) and not isinstance(late, bool) else None


def _timeline(evidence: Iterable[Mapping[str, Any]], table: str | None, *,
              trigger: str | None = None,
              consequence: str | None = None) -> list[dict[str, Any]]:
    """The evidence, said in pt-BR: what happened, when, and the hand it touched. `trigger`
    and `consequence` (the live record's) name the abandonment itself in evidence written
    before its items said so: the last missed deadline of a streak."""
    events = list(evidence)
    deadlines = {e["at_ms"]: e["deadline_ms"] for e in events if e.get("kind") == "deadline"
                 and _is_int(e.get("at_ms")) and _is_int(e.get("deadline_ms"))}
    hands_at = {e["at_ms"]: e["hand"] for e in events if e.get("kind") == "automatic"
                and _is_int(e.get("at_ms")) and _is_int(e.get("hand"))}
    final = None
    if trigger == "automatic_actions" and not any(e.get("abandonment") for e in events):
        final = next((e for e in reversed(events) if e.get("kind") == "deadline"), None)
    items = []
    for event in events:
        kind = str(event.get("kind"))
        label = EVIDENCE_PT.get(kind, kind)
        facts = []
        ending = event.get("abandonment") or (consequence if event is final else None)
        if kind == "deadline" and ending:
            label = ("Prazo esgotado: o abandono que encerrou a partida" if ending == "forfeit"
                     else "Prazo esgotado: abandono isento; a sequência atravessou um "
                          "reinício do servidor, foi zerada e a partida seguiu")
        if kind == "left" and ending == "forfeit":
            label = "Saiu da mesa: o abandono que encerrou a partida"
        if kind == "disconnected" and event.get("cause") == "server_shutdown":
            label = "Desconectado pelo servidor (o servidor foi desligado)"
        if kind == "connected" and event.get("at_start"):
            facts.append("já estava na mesa quando a partida começou")
        if event.get("decision"):
            facts.append("decisão: " + ("jogar" if event["decision"] == "play" else "responder"))
        if _is_int(event.get("streak")):
            facts.append(f"{event['streak']}ª ação automática seguida")
        if kind == "automatic":
            late = _late_ms(event, deadlines)
            if late is not None:
                facts.append(f"{late} ms após o prazo")
        elif _is_int(event.get("deadline_ms")):
            facts.append("prazo " + _when_ms(event["deadline_ms"]))
        if kind == "server_restart":
            if _is_int(event.get("run")):
                facts.append(f"começou a execução nº {event['run']} do servidor")
            if _is_int(event.get("down_since_ms")) and _is_int(event.get("downtime_ms")):
                facts.append(f"fora do ar desde {_when_ms(event['down_since_ms'])} "
                             f"({_duration_pt(event['downtime_ms'] / 1000)})")
            elif "down_since_ms" in event:
                facts.append("a execução anterior parou sem registro (queda): "
                             "tempo fora do ar desconhecido")
        if kind == "server_fault" and _is_int(event.get("ended_ms")) and _is_int(
                event.get("at_ms")):
            facts.append(f"a casa não conseguiu gravar até {_when_ms(event['ended_ms'])}"
                         f" ({_duration_pt((event['ended_ms'] - event['at_ms']) / 1000)});"
                         " os prazos recomeçaram inteiros")
        if kind == "exempt":
            facts.extend(EXEMPT_PT.get(str(r), str(r)) for r in event.get("reasons") or [])
            facts.append("sem contagem de abandono e sem suspensão")
        hand = event.get("hand")
        if not _is_int(hand) and kind == "deadline":
            hand = hands_at.get(event.get("at_ms"))  # its automatic action's, at that instant
        items.append({
            "kind": kind, "label": label, "at": _when_ms(event.get("at_ms")),
            "seat": event.get("seat"), "facts": facts,
            "hand": f"{table}-{hand}" if table and _is_int(hand) else None,
        })
    return items


def _audit_effects(entry: review.AuditEntry) -> str:
    """What an audit event did, in pt-BR: the penalty a record started with; what an overturn
    gave back (chips, rating points) and whether it lifted a pause."""
    detail = entry.detail
    if entry.action == "created":
        status = detail.get("status")
        parts = [f"situação inicial: {STATUS_PT.get(RecordStatus(status), status)}"
                 if status in set(RecordStatus) else ""]
        if _is_int(detail.get("strikes")) and detail["strikes"]:
            parts.append(f"{detail['strikes']}º abandono em 7 dias")
        pause = detail.get("pause_s")
        if isinstance(pause, int | float) and pause > 0:
            parts.append(f"suspensão de {_pause_pt(pause)}")
        for reason in detail.get("exempt_reasons") or []:
            parts.append("isento: " + EXEMPT_PT.get(str(reason), str(reason)))
        return "; ".join(p for p in parts if p)
    if entry.action == "overturn":
        chips = detail.get("chips_returned", 0)
        rating = detail.get("rating_returned", 0.0)
        parts = [f"{chips} fichas devolvidas",
                 # written as the record page writes it: "+88,2", not "+88.2"
                 f"{decimal_pt(rating, sign=True)} pontos devolvidos"
                 if isinstance(rating, int | float)
                 else "", "suspensão retirada" if detail.get("pause_lifted")
                 else "sem suspensão a retirar"]
        return "; ".join(p for p in parts if p)
    return ""


def _not_found(request: web.Request) -> web.Response:
    return render(request, "error.html", status=404, title="Registro não encontrado",
                  message="Não existe registro de abandono com esse número.")


# the decision form's refusals said about its own fields
DECISION_NOTE_PT: Final = "Escreva o texto da nota da decisão (de 1 a 2000 caracteres)."


async def record_page(request: web.Request, *, error: str | None = None,
                      status: int = 200, error_field: str | None = None,
                      note: str = "", decision: str = "") -> web.StreamResponse:
    checked = _page_operator(request)
    if isinstance(checked, web.Response):
        return checked
    try:
        detail = await _record_detail(request, _record_id(request))
    except (StoreError, ApiError):
        return _not_found(request)
    record: review.AbandonmentRecord = detail["record"]
    context = detail["context"]
    decidable = record.status in (RecordStatus.PENDING, RecordStatus.UPHELD)
    # an operator's own record is another operator's to decide (`review.decide`)
    own = record.user_id == checked.id
    return render(
        request, "operator/abandonment.html", status=status, error=error, record=record,
        detail=detail, context=context,
        timeline=_timeline(record.evidence, context["table"], trigger=context["trigger"],
                           consequence=context["consequence"]),
        hands=detail["hands"], when=_when, when_ms=_when_ms, statuses=STATUS_PT,
        variants=VARIANT_PT, kinds=KIND_PT, audit_pt=AUDIT_PT, effects=_audit_effects,
        triggers=TRIGGER_PT, consequences=CONSEQUENCE_PT,
        exempt_reasons=[EXEMPT_PT.get(r, r) for r in context["exempt_reasons"]],
        duration=_duration_pt, kind=context["kind"], table=context["table"],
        match_number=context["match_number"], decidable=decidable and not own,
        own_record=decidable and own,
        can_uphold=record.status is RecordStatus.PENDING
        or (record.appeal_text is not None and not record.appeal_answered),
        # the form sends back the state it shows: a decision on a record that changed since
        # (an appeal filed, another operator's decision) is refused, not taken on a stale page
        review_state=record.review_state.token, error_field=error_field, note=note,
        decision=decision, done=_done_now(request.query.get("done"), record.status))


def _done_now(done: str | None, status: RecordStatus) -> str | None:
    """The `done` a decision redirects with, kept only while the record still shows that
    decision: the address alone (a reload after another operator's decision, a typed `done`)
    never says a decision the record does not show."""
    shown = {"uphold": RecordStatus.UPHELD, "overturn": RecordStatus.OVERTURNED}
    return done if done is not None and shown.get(done) is status else None


async def decision_form(request: web.Request) -> web.StreamResponse:
    raw = request.match_info["record"]
    # logged out: back to the record's page after logging in (a GET), not to this POST
    checked = _page_operator(request, f"/operator/abandonments/{raw}")
    if isinstance(checked, web.Response):
        return checked
    try:
        record_id = _record_id(request)
    except ApiError:
        return _not_found(request)
    body = await read_body(request)
    note = body.get("note")
    try:
        decision = _decision(body.get("decision"))
        # a page's form always names the state it showed; a form without one (a client of its
        # own) is taken as before
        expected = body.get("expected_state") or None
        await review.decide(_pool(request), record_id, checked.id, decision, note, expected)
    except StoreError as exc:
        # the page again, as the record is now, with the note the operator wrote kept in its
        # field (a refusal about the note is said at the note)
        field = "note" if exc.code == "bad_text" else None
        # a refusal of the note keeps the choice made too (the record did not change); after
        # any other the operator chooses again, on the record as it is now
        chosen = body.get("decision") if field else None
        return await record_page(
            request, error=DECISION_NOTE_PT if field else _pt(exc), status=_status_of(exc),
            error_field=field, note=note if isinstance(note, str) else "",
            decision=chosen if isinstance(chosen, str) else "")
    return _see_other(f"/operator/abandonments/{record_id}?done={decision.value}")


async def live_record_page(request: web.Request) -> web.StreamResponse:
    """A live abandonment record, read only: the facts, the evidence timeline, and the links to
    its JSON and to the review record of the same match when there is one."""
    checked = _page_operator(request)
    if isinstance(checked, web.Response):
        return checked
    abandonment_id = ascii_uint(request.match_info["abandonment"])
    row = None
    if abandonment_id is not None and abandonment_id > 0:
        row = await get_abandonment_row(_pool(request), abandonment_id)
    if row is None:
        return _not_found(request)
    pool = _pool(request)
    seats = await pool.fetchval("SELECT seats FROM live_tables WHERE id = $1", row["table_id"])
    spanned = row["id"] in await restarts_spanned(pool, [row["id"]])
    evidence = loaded_evidence(row["evidence"])
    hands = sorted({e["hand"] for e in evidence if _is_int(e.get("hand"))})
    # the hand a forfeit ended: the abandonment's own item names it (the review page marks it
    # too; this page listed the hand unmarked)
    ended_hand = next((e["hand"] for e in evidence if e.get("abandonment") == "forfeit"
                       and _is_int(e.get("hand"))), None)
    started = await _pool(request).fetchval(
        "SELECT players FROM live_matches WHERE table_id = $1 AND number = $2",
        row["table_id"], row["match_number"])
    lineup = list(started) if started is not None else []
    names = await _names(_pool(request), lineup)
    opponents = [names.get(u, "?") if u else "robô" for seat, u in enumerate(lineup)
                 if seat % 2 != row["team"]]
    partner = None
    if len(lineup) == 4:
        other = lineup[(row["seat"] + 2) % 4]
        partner = names.get(other, "?") if other else "robô"
    return render(
        request, "operator/live_abandonment.html", row=row, when=_when,
        timeline=_timeline(evidence, row["table_id"], trigger=row["trigger"],
                           consequence=row["consequence"]),
        hands=[f"{row['table_id']}-{h}" for h in hands], ended_hand=ended_hand,
        live=live_link(row["id"]),
        review=review_link(row["review_id"]), kinds=ALL_KINDS_PT,
        variants=LIVE_VARIANT_PT, triggers=TRIGGER_PT, opponents=opponents, partner=partner,
        consequences=CONSEQUENCE_PT, seats=seats, match_spanned_restart=spanned,
        never_connected=not any(e.get("kind") in ("connected", "disconnected")
                                for e in evidence))


async def audit_page(request: web.Request) -> web.StreamResponse:
    checked = _page_operator(request)
    if isinstance(checked, web.Response):
        return checked
    try:
        before = _id(request.query.get("before"), "before")
    except ApiError:
        # as the JSON API refuses it (400 `bad_filter`), not a first page passed off as this one
        return render(request, "error.html", status=400, title="Registro de auditoria",
                      message=AUDIT_BEFORE_PT)
    # one more than the page: whether an older event exists (a full page may be the last)
    entries = await review.audit_log(_pool(request), before_id=before, limit=PAGE + 1)
    more = f"?before={entries[PAGE - 1].id}" if len(entries) > PAGE else None
    entries = entries[:PAGE]
    return render(request, "operator/audit.html", entries=entries, more=more, when=_when,
                  audit_pt=AUDIT_PT, effects=_audit_effects)


def setup(app: web.Application) -> None:
    """The ranked service, its JSON API and its pages (after `server.pages.setup`)."""
    setup_service(app)
    r = app.router
    r.add_get("/api/ranked/queue", api_queue, name="ranked_queue")
    r.add_post("/api/ranked/queue", api_join, name="ranked_join")
    r.add_post("/api/ranked/queue/leave", api_leave, name="ranked_leave")
    r.add_post("/api/ranked/invitations/decline", api_decline, name="ranked_decline")
    r.add_get("/api/me/standing", api_standing, name="ranked_standing")
    r.add_post("/api/me/abandonments/{record}/appeal", api_appeal, name="ranked_appeal")
    r.add_get("/api/ranked/leaderboard", api_leaderboard, name="ranked_leaderboard")
    r.add_get("/api/ranked/arenas", api_arenas, name="ranked_arenas")
    r.add_post("/api/ranked/arenas", api_create_arena, name="ranked_arena_create")
    r.add_post("/api/ranked/arenas/{arena}/join", _arena_action(True), name="ranked_arena_join")
    r.add_post("/api/ranked/arenas/{arena}/leave", _arena_action(False),
               name="ranked_arena_leave")
    r.add_get("/api/ranked/operator/abandonments", api_records, name="ranked_records")
    r.add_get("/api/ranked/operator/abandonments/{record}", api_record, name="ranked_record")
    r.add_post("/api/ranked/operator/abandonments/{record}/decision", api_decide,
               name="ranked_decide")
    r.add_get("/api/ranked/operator/audit", api_audit, name="ranked_audit")
    r.add_get("/ranked", _signed_in(ranked_page), name="ranked_page")
    r.add_post("/ranked/queue", ranked_join_form, name="ranked_join_form")
    r.add_post("/ranked/queue/leave", ranked_leave_form, name="ranked_leave_form")
    r.add_post("/ranked/invitations/decline", ranked_decline_form, name="ranked_decline_form")
    r.add_get("/me", _signed_in(me_page), name="me_page")
    r.add_post("/me/abandonments/{record}/appeal", appeal_form, name="appeal_form")
    r.add_get("/me/abandonments/{record}/appeal", back_to("/me"), name="appeal_form_back")
    r.add_get("/ranked/queue", back_to("/ranked"), name="ranked_join_form_back")
    r.add_get("/ranked/queue/leave", back_to("/ranked"), name="ranked_leave_form_back")
    r.add_get("/ranked/invitations/decline", back_to("/ranked"),
              name="ranked_decline_form_back")
    r.add_get("/leaderboard", leaderboard_page, name="leaderboard_page")
    r.add_get("/arena", _signed_in(arena_page), name="arena_page")
    r.add_post("/arena", arena_create_form, name="arena_create_form")
    r.add_post("/arena/{arena}/join", _arena_form(True), name="arena_join_form")
    r.add_post("/arena/{arena}/leave", _arena_form(False), name="arena_leave_form")
    r.add_post("/arena/{arena}/end", arena_end_form, name="arena_end_form")
    r.add_post("/api/ranked/arenas/{arena}/end", api_end_arena, name="ranked_arena_end")
    # the address a refused arena form answered at, reloaded or bookmarked: the arena page
    r.add_get("/arena/{arena}/{action:join|leave|end}", back_to("/arena"),
              name="arena_form_back")
    r.add_get("/operator/abandonments", _signed_in(records_page), name="operator_records_page")
    r.add_get("/operator/abandonments/{record}", _signed_in(record_page),
              name="operator_record_page")
    r.add_post("/operator/abandonments/{record}/decision", decision_form,
               name="operator_decision_form")
    r.add_get("/operator/abandonments/{record}/decision", _decision_back,
              name="operator_decision_form_back")
    r.add_get("/operator/audit", _signed_in(audit_page), name="operator_audit_page")
    r.add_get("/operator/live-abandonments/{abandonment}", _signed_in(live_record_page),
              name="operator_live_record_page")
