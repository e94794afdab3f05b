"""Ranked play over HTTP: the JSON API and the pt-BR pages.

Players: the queues (`/ranked`, `/api/ranked/queue`), their standing (`/me`,
`/api/me/standing`), one appeal per abandonment record, the leaderboards (`/leaderboard`) and
the arenas (`/arena`). Operators: the abandonment review queue with its filters, each record's
evidence timeline and the decision form (`/operator/abandonments`), and the audit log
(`/operator/audit`); the same under `/api/ranked/operator/`. The views are thin: they parse,
call the service or the stores, and turn their stable error codes into HTTP errors (JSON) or a
message in pt-BR on the page (forms, which work without JavaScript).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Final
from urllib.parse import quote, urlencode

from aiohttp import web

from server.accounts import User
from server.app import (
    CLOCK,
    POOL,
    ApiError,
    ascii_uint,
    current_user,
    read_body,
    require_operator,
)
from server.app import require_user as api_require_user
from server.pages import render
from server.ranked import arena_results, glicko2, ledger, ratings, review
from server.ranked.penalties import Decision, RecordStatus
from server.ranked.service import (
    MAX_ARENA,
    MAX_ARENA_LEAD,
    RANKED,
    ArenaEvent,
    QueueState,
    QueueStatus,
    RankedError,
    RankedService,
    hand_ids,
    queue_key,
)
from server.ranked.service import setup as setup_service
from server.ranked.store import Db, StoreError
from truco.variants import Variant

PAGE: Final = 50
MAX_ARENA_LEAD_MINUTES: Final = int(MAX_ARENA_LEAD // 60)
MAX_ARENA_MINUTES: Final = int(MAX_ARENA // 60)
QUEUES: Final = tuple((v, s) for v in Variant for s in (2, 4))
VARIANT_PT: Final = {Variant.PAULISTA: "Paulista", Variant.MINEIRO: "Mineiro",
                     Variant.ARGENTINO: "Argentino"}
STATUS_PT: Final = {RecordStatus.PENDING: "Pendente", RecordStatus.UPHELD: "Mantido",
                    RecordStatus.OVERTURNED: "Revertido", RecordStatus.EXEMPT: "Isento"}
KIND_PT: Final = {"ranked": "Ranqueada", "arena": "Arena"}
EVIDENCE_PT: Final = {
    "deadline": "Prazo esgotado", "automatic": "Ação automática", "connected": "Conectou",
    "disconnected": "Desconectou", "acted": "Voltou a jogar",
    "server_restart": "Reinício do servidor",
}
AUDIT_PT: Final = {"created": "Registro criado", "appeal": "Recurso do jogador",
                   "uphold": "Mantido", "overturn": "Revertido"}
STATE_PT: Final = {
    QueueState.IDLE: "Fora da fila.",
    QueueState.INVITING: "Esperando a sua dupla entrar na fila com você.",
    QueueState.QUEUED: "Na fila, procurando adversários.",
    QueueState.PAIRED: ("Adversários encontrados. A mesa ainda não pode ser aberta: as mesas "
                        "ranqueadas ao vivo ainda não estão disponíveis nesta casa. Você continua "
                        "reservado até ela abrir ou até sair."),
    QueueState.SEATED: "Você está numa mesa ranqueada.",
}
# seconds between reloads of the queue page while its player waits for a table
QUEUE_PAGE_REFRESH: Final = 2
WAITING_STATES: Final = frozenset({QueueState.INVITING, QueueState.QUEUED, QueueState.PAIRED})
PAIRED_OPENING_PT: Final = "Adversários encontrados: a mesa está sendo aberta."
# the stores' stable codes, said to players in pt-BR
ERROR_PT: Final = {
    "bad_queue": "Escolha uma variante e 1x1 ou 2x2.",
    "bad_partner": "A dupla é outro jogador, e só no 2x2.",
    "unknown_user": "Não existe jogador com esse nome.",
    "already_queued": "Você já está na fila ranqueada (ou numa mesa).",
    "not_queued": "Você não está na fila ranqueada.",
    "paused": "Você está suspenso das ranqueadas por abandonos repetidos.",
    "partner_paused": "A sua dupla está suspensa das ranqueadas por abandonos repetidos.",
    "partner_insufficient_chips": "A sua dupla não tem fichas suficientes para a aposta.",
    "in_arena": "Você já está numa arena (ou numa mesa dela): saia dela antes.",
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
    "not_found": "Registro não encontrado.",
    "already_overturned": "Este registro já foi revertido; a decisão é final.",
    "already_upheld": "Este registro já foi mantido e não tem recurso novo.",
    "exempt": "Este registro é isento (falha do servidor): não há penalidade.",
    "bad_filter": "Filtro inválido.",
    "bad_decision": "Escolha manter ou reverter.",
    "unavailable": "As ranqueadas estão indisponíveis agora; tente de novo em instantes.",
}
_STATUS_BY_CODE: Final = {
    "not_found": 404, "unknown_arena": 404, "unknown_user": 404, "forbidden": 403,
    "already_queued": 409, "not_queued": 409, "paused": 409, "insufficient_chips": 409,
    "partner_paused": 409, "partner_insufficient_chips": 409, "in_arena": 409,
    "arena_closed": 409, "closed": 409, "already_joined": 409, "not_joined": 409,
    "already_appealed": 409, "nothing_to_appeal": 409, "already_overturned": 409,
    "already_upheld": 409, "exempt": 409, "conflict": 409, "unavailable": 503,
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


def _when_ms(at_ms: object) -> str:
    if not isinstance(at_ms, int) or isinstance(at_ms, bool):
        return ""
    moment = datetime.fromtimestamp(at_ms / 1000, UTC)
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


def _int(value: object, what: str, default: int | None = None) -> int | None:
    if value is None or value == "":
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    # ASCII digits only ("²".isdigit() is true, but int() refuses it), at most 18 of them
    number = ascii_uint(value)
    if number is not None:
        return number
    raise ApiError(400, "bad_filter", f"{what} must be a whole number.")


def _record_id(request: web.Request) -> int:
    record_id = ascii_uint(request.match_info["record"])
    if record_id is None or record_id == 0:
        raise ApiError(404, "not_found", "No abandonment record with that id.")
    return record_id


async def _user_id_by_name(db: Db, name: object) -> int | None:
    if not isinstance(name, str) or not name.strip():
        return None
    value = await db.fetchval("SELECT id FROM users WHERE lower(name) = lower($1)", name.strip())
    return value if isinstance(value, int) else None


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
        "appealed": record.appeal_text is not None, "appeal_answered": record.appeal_answered,
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


def _audit_json(entry: review.AuditEntry) -> dict[str, Any]:
    return {"id": entry.id, "record": entry.record_id, "actor": entry.actor_name,
            "action": entry.action, "note": entry.note, "detail": dict(entry.detail),
            "at": entry.at.isoformat()}


def _arena_json(event: ArenaEvent, names: Mapping[int, str], now: float) -> dict[str, Any]:
    arena = event.arena
    state = ("closed" if arena.closed else "running" if arena.running(now)
             else "upcoming" if now < arena.starts_at else "ending")
    return {
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


# --- what the pages and the API share ----------------------------------------------------------


async def _queue_view(request: web.Request, user: User) -> dict[str, Any]:
    service = _service(request)
    status = service.status(user.id)
    sizes = service.queue_sizes()
    names = await _names(_pool(request), [status.partner, *status.seating])
    return {
        "queue": status.to_json() | {
            "partner": names.get(status.partner) if status.partner else None,
            "seating": [names.get(u) for u in status.seating],
            "message": (PAIRED_OPENING_PT if status.state is QueueState.PAIRED
                        and service.launcher is not None else STATE_PT[status.state]),
        },
        "queues": [{"variant": key.variant.value, "seats": key.seats, "waiting": sizes[key]}
                   for key in sorted(sizes, key=lambda k: (k.variant.value, k.seats))],
        "stake": service.settings.stake,
        "launcher": service.launcher is not None,
    }


async def _join_queue(request: web.Request, user: User, body: Mapping[str, Any]) -> QueueStatus:
    key = queue_key(body.get("variant"), body.get("seats"))
    partner_name = body.get("partner")
    partner = None
    if isinstance(partner_name, str) and partner_name.strip():
        partner = await _user_id_by_name(_pool(request), partner_name)
        if partner is None:
            raise RankedError("unknown_user", f"No player named {partner_name.strip()!r}.")
    elif partner_name not in (None, ""):
        raise RankedError("bad_partner", "The partner is a player's name.")
    return await _service(request).join(user.id, key, partner)


async def _standing(request: web.Request, user: User) -> dict[str, Any]:
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
        "FROM ranked_rating_history WHERE user_id = $1 ORDER BY id DESC LIMIT $2",
        user.id, PAGE)
    lines = [{"id": r["id"], "variant": r["variant"], "seats": r["seats"],
              "reason": r["reason"], "match": r["match_ref"],
              "before": round(r["rating_before"], 2), "after": round(r["rating_after"], 2),
              "delta": round(r["rating_after"] - r["rating_before"], 2),
              "rd": round(r["rd_after"], 2), "at": r["at"].isoformat()} for r in history]
    # one rating period per match and no draws: the rating rises exactly when the match is won
    matches = [{"match": h["match"], "variant": h["variant"], "seats": h["seats"],
                "won": h["delta"] > 0, "delta": h["delta"], "at": h["at"],
                "table": h["match"].split(":")[1] if h["match"].count(":") == 2 else None}
               for h in lines if h["reason"] == "match"]
    balance = await ledger.balance(db, user.id)
    statement = await ledger.statement(db, user.id, limit=PAGE)
    records = await review.list_records(db, user_id=user.id, limit=PAGE)
    paused = await review.pause_remaining(db, user.id, now)
    return {
        "ratings": queues, "history": lines, "matches": matches,
        "chips": {"balance": balance, "ledger": [
            {"entry": s.entry_id, "reason": s.reason.value, "reference": s.reference,
             "match": s.match_ref, "amount": s.amount, "balance_after": s.balance_after,
             "at": s.created_at.isoformat()} for s in statement]},
        "abandonments": [_record_json(r, {user.id: user.name}, full=True) | {
            "can_appeal": r.status.counts and r.appeal_text is None} for r in records],
        "pause_remaining_s": paused.total_seconds(),
    }


def _parse_time(value: object, what: str, *, end: bool = False) -> datetime | None:
    """A filter bound: an ISO date (a whole day: the end bound is the next midnight) or time."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ApiError(400, "bad_filter", f"{what} must be an ISO 8601 date or time.")
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            return datetime.combine(day + timedelta(days=1 if end else 0), time(), UTC)
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ApiError(400, "bad_filter", f"{what} must be an ISO 8601 date or time.") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Filters:
    status: RecordStatus | None
    player: str
    variant: Variant | None
    seats: int | None
    kind: str | None
    appealed: bool | None
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
                raise ApiError(400, "bad_filter", f"Unknown {name} {value!r}.")
            return value

        status = choice("status", [s.value for s in RecordStatus])
        variant = choice("variant", [v.value for v in Variant])
        seats = choice("seats", ["2", "4"])
        appealed = choice("appealed", ["yes", "no"])
        return cls(
            status=None if status is None else RecordStatus(status),
            player=query.get("player", "").strip(),
            variant=None if variant is None else Variant(variant),
            seats=None if seats is None else int(seats),
            kind=choice("kind", KIND_PT),
            appealed=None if appealed is None else appealed == "yes",
            since=_parse_time(query.get("since"), "since"),
            until=_parse_time(query.get("until"), "until", end=True),
            before=_int(query.get("before"), "before"),
            raw={k: v for k, v in query.items() if k != "before"},
        )


async def _find_records(request: web.Request, filters: Filters) -> list[review.AbandonmentRecord]:
    db = _pool(request)
    user_id = None
    if filters.player:
        user_id = await _user_id_by_name(db, filters.player)
        if user_id is None:
            return []
    return list(await review.list_records(
        db, status=filters.status, user_id=user_id, variant=filters.variant,
        seats=filters.seats, appealed=filters.appealed, since=filters.since,
        until=filters.until, limit=PAGE, before_id=filters.before,
        match_prefix=filters.kind))


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
    return {
        "record": record, "audit": audit, "names": names, "stake": staked,
        "rating_change": None if cost is None else cost["rating_after"] - cost["rating_before"],
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
    await _join_queue(request, user, await read_body(request))
    return web.json_response(await _queue_view(request, user))


@_api
async def api_leave(request: web.Request) -> web.StreamResponse:
    user = api_require_user(request)
    await _service(request).leave(user.id)
    return web.json_response(await _queue_view(request, user))


@_api
async def api_standing(request: web.Request) -> web.StreamResponse:
    return web.json_response(await _standing(request, api_require_user(request)))


@_api
async def api_appeal(request: web.Request) -> web.StreamResponse:
    user = api_require_user(request)
    body = await read_body(request)
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


async def _arenas(request: web.Request) -> dict[str, Any]:
    service = _service(request)
    events = list(service.arenas.values())
    names = await _names(_pool(request), [e.player for ev in events for e in ev.arena.entrants])
    now = service.clock.now()
    live = [_arena_json(ev, names, now) for ev in events]
    recorded = await _pool(request).fetch(
        "SELECT id, variant, seats, starts_at, ends_at FROM arena_events "
        "ORDER BY closed_at DESC LIMIT 10")
    past = []
    for row in recorded:
        if row["id"] in service.arenas:
            continue
        results = await arena_results.results(_pool(request), row["id"])
        past.append({"id": row["id"], "variant": row["variant"], "seats": row["seats"],
                     "state": "closed", "starts_at": row["starts_at"].isoformat(),
                     "ends_at": row["ends_at"].isoformat(),
                     "standings": [{"rank": r.rank, "player": r.name, "points": r.points,
                                    "wins": r.wins, "games": r.games} for r in results],
                     "podium": [r.name for r in results if r.podium]})
    return {"arenas": live + past}


@_api
async def api_arenas(request: web.Request) -> web.StreamResponse:
    api_require_user(request)
    return web.json_response(await _arenas(request))


async def _create_arena(request: web.Request, body: Mapping[str, Any]) -> ArenaEvent:
    variant = body.get("variant")
    if not isinstance(variant, str) or variant not in set(Variant):
        raise RankedError("bad_arena", "Unknown variant.")
    seats = _int(body.get("seats"), "seats", 2)
    starts_in = _int(body.get("starts_in_minutes"), "starts_in_minutes", 0)
    minutes = _int(body.get("minutes"), "minutes", 60)
    assert seats is not None and starts_in is not None and minutes is not None
    if not 0 <= starts_in <= MAX_ARENA_LEAD_MINUTES:
        raise RankedError("bad_arena", "An arena starts within "
                                       f"{MAX_ARENA_LEAD_MINUTES} minutes (24 hours).")
    if not 0 < minutes <= MAX_ARENA_MINUTES:
        raise RankedError("bad_arena", "An arena lasts more than 0 and at most "
                                       f"{MAX_ARENA_MINUTES} minutes (24 hours).")
    now = _service(request).clock.now()
    begin = now + 60 * starts_in
    return await _service(request).create_arena(Variant(variant), seats, begin,
                                                begin + 60 * minutes)


@_api
async def api_create_arena(request: web.Request) -> web.StreamResponse:
    require_operator(request)
    event = await _create_arena(request, await read_body(request))
    return web.json_response({"arena": _arena_json(event, {}, _service(request).clock.now())},
                             status=201)


def _arena_action(join: bool) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    @_api
    async def view(request: web.Request) -> web.StreamResponse:
        user = api_require_user(request)
        service = _service(request)
        act = service.join_arena if join else service.leave_arena
        event = await act(user.id, request.match_info["arena"])
        names = await _names(_pool(request), [e.player for e in event.arena.entrants])
        return web.json_response({"arena": _arena_json(event, names, service.clock.now())})

    return view


@_api
async def api_records(request: web.Request) -> web.StreamResponse:
    require_operator(request)
    records = await _find_records(request, Filters.parse(request.query))
    names = await _names(_pool(request), [r.user_id for r in records]
                         + [r.decided_by for r in records])
    return web.json_response({"abandonments": [_record_json(r, names) for r in records]})


@_api
async def api_record(request: web.Request) -> web.StreamResponse:
    require_operator(request)
    detail = await _record_detail(request, _record_id(request))
    return web.json_response({
        "abandonment": _record_json(detail["record"], detail["names"], full=True) | {
            "stake": detail["stake"], "rating_change": detail["rating_change"]},
        "audit": [_audit_json(a) for a in detail["audit"]],
    })


def _decision(value: object) -> Decision:
    if not isinstance(value, str) or value not in set(Decision):
        raise RankedError("bad_decision", "The decision is 'uphold' or 'overturn'.")
    return Decision(value)


@_api
async def api_decide(request: web.Request) -> web.StreamResponse:
    operator = require_operator(request)
    body = await read_body(request)
    record = await review.decide(_pool(request), _record_id(request), operator.id,
                                 _decision(body.get("decision")), body.get("note"))
    names = await _names(_pool(request), [record.user_id, record.decided_by])
    audit = await review.audit_log(_pool(request), record_id=record.id, limit=1)
    return web.json_response({"abandonment": _record_json(record, names, full=True),
                              "audit": [_audit_json(a) for a in audit]})


@_api
async def api_audit(request: web.Request) -> web.StreamResponse:
    require_operator(request)
    entries = await review.audit_log(
        _pool(request), record_id=_int(request.query.get("record"), "record"),
        before_id=_int(request.query.get("before"), "before"), limit=PAGE)
    return web.json_response({"audit": [_audit_json(a) for a in entries]})


# --- the pages ---------------------------------------------------------------------------------


def _page_user(request: web.Request) -> User:
    user = current_user(request)
    if user is None:
        # the whole path and query is one parameter's value: its "&", "=" and "?" encoded too,
        # or "/operator/abandonments?player=a&variant=b" comes back cut at the "&"
        raise web.HTTPSeeOther("/?next=" + quote(request.path_qs, safe="/"))
    return user


def _page_operator(request: web.Request) -> User | web.Response:
    user = _page_user(request)
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
    return {"queue": queue, "queues": view["queues"], "stake": view["stake"],
            "waited": _duration_pt(waited), "variants": VARIANT_PT,
            "state": QueueState(queue["state"])}


async def ranked_page(request: web.Request, *, error: str | None = None,
                      status: int = 200) -> web.Response:
    user = _page_user(request)
    view = await _queue_view(request, user)
    response = render(request, "ranked/queue.html", status=status, error=error,
                      **_queue_context(view))
    if QueueState(view["queue"]["state"]) in WAITING_STATES:
        # the page works without script: it reloads itself while the player waits, so the
        # table the pairing opens shows up ("Ir para a mesa") without pressing anything
        response.headers["Refresh"] = str(QUEUE_PAGE_REFRESH)
    return response


async def ranked_join_form(request: web.Request) -> web.Response:
    user = _page_user(request)
    try:
        await _join_queue(request, user, await read_body(request))
    except StoreError as exc:
        return await ranked_page(request, error=_pt(exc), status=_status_of(exc))
    return _see_other("/ranked")


async def ranked_leave_form(request: web.Request) -> web.Response:
    user = _page_user(request)
    try:
        await _service(request).leave(user.id)
    except StoreError as exc:
        return await ranked_page(request, error=_pt(exc), status=_status_of(exc))
    return _see_other("/ranked")


def _me_context(standing: Mapping[str, Any]) -> dict[str, Any]:
    def iso(text: str) -> str:
        return _when(datetime.fromisoformat(text))

    return {
        "standing": standing, "variants": {v.value: name for v, name in VARIANT_PT.items()},
        "statuses": {s.value: name for s, name in STATUS_PT.items()},
        "when": iso, "pause": _duration_pt(standing["pause_remaining_s"]),
    }


async def me_page(request: web.Request, *, error: str | None = None, error_record: int = 0,
                  status: int = 200) -> web.Response:
    user = _page_user(request)
    standing = await _standing(request, user)
    return render(request, "ranked/me.html", status=status, error=error,
                  error_record=error_record, **_me_context(standing))


async def appeal_form(request: web.Request) -> web.Response:
    user = _page_user(request)
    record_id = _record_id(request)
    body = await read_body(request)
    try:
        await review.appeal(_pool(request), record_id, user.id, body.get("text"))
    except StoreError as exc:
        return await me_page(request, error=_pt(exc), error_record=record_id,
                             status=_status_of(exc))
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
                     status: int = 200) -> web.Response:
    user = _page_user(request)
    data = await _arenas(request)
    for event in data["arenas"]:
        event["starts"] = _when(datetime.fromisoformat(event["starts_at"]))
        event["ends"] = _when(datetime.fromisoformat(event["ends_at"]))
        live = _service(request).arenas.get(event["id"])
        entrant = None if live is None else live.arena.entrant(user.id)
        event["joined"] = entrant is not None and entrant.active
    return render(request, "ranked/arena.html", status=status, error=error,
                  arenas=data["arenas"], variants={v.value: n for v, n in VARIANT_PT.items()})


def _arena_form(join: bool) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def view(request: web.Request) -> web.StreamResponse:
        user = _page_user(request)
        service = _service(request)
        act = service.join_arena if join else service.leave_arena
        try:
            await act(user.id, request.match_info["arena"])
        except StoreError as exc:
            return await arena_page(request, error=_pt(exc), status=_status_of(exc))
        return _see_other("/arena")

    return view


async def arena_create_form(request: web.Request) -> web.StreamResponse:
    checked = _page_operator(request)
    if isinstance(checked, web.Response):
        return checked
    try:
        await _create_arena(request, await read_body(request))
    except (StoreError, ApiError) as exc:
        return await arena_page(request, error=_pt(exc) if isinstance(exc, StoreError)
                                else ERROR_PT["bad_arena"], status=400)
    return _see_other("/arena")


async def records_page(request: web.Request) -> web.StreamResponse:
    checked = _page_operator(request)
    if isinstance(checked, web.Response):
        return checked
    try:
        filters = Filters.parse(request.query)
    except ApiError:
        return render(request, "error.html", status=400, title="Filtro inválido",
                      message="Confira os filtros: datas no formato AAAA-MM-DD.")
    records = await _find_records(request, filters)
    names = await _names(_pool(request), [r.user_id for r in records])
    more = None
    if len(records) == PAGE:
        more = "?" + urlencode({**filters.raw, "before": str(records[-1].id)})
    return render(request, "operator/abandonments.html", records=records, names=names,
                  filters=filters.raw, more=more, when=_when, statuses=STATUS_PT,
                  variants=VARIANT_PT, kinds=KIND_PT, player_unknown=bool(
                      filters.player and not records
                      and await _user_id_by_name(_pool(request), filters.player) is None))


def _timeline(record: review.AbandonmentRecord) -> list[dict[str, Any]]:
    """The evidence, said in pt-BR: what happened, when, and the hand it touched."""
    table = record.match_ref.split(":")[1] if record.match_ref.count(":") == 2 else None
    items = []
    for event in record.evidence:
        kind = str(event.get("kind"))
        facts = []
        if event.get("decision"):
            facts.append("decisão: " + ("jogar" if event["decision"] == "play" else "responder"))
        if isinstance(event.get("streak"), int):
            facts.append(f"{event['streak']}ª ação automática seguida")
        if isinstance(event.get("late_ms"), int):
            facts.append(f"{event['late_ms']} ms após o prazo")
        if event.get("deadline_ms"):
            facts.append("prazo " + _when_ms(event["deadline_ms"]))
        hand = event.get("hand")
        items.append({
            "kind": kind, "label": EVIDENCE_PT.get(kind, kind), "at": _when_ms(event.get("at_ms")),
            "seat": event.get("seat"), "facts": facts,
            "hand": f"{table}-{hand}" if table and isinstance(hand, int) else None,
        })
    return items


async def record_page(request: web.Request, *, error: str | None = None,
                      status: int = 200) -> web.StreamResponse:
    checked = _page_operator(request)
    if isinstance(checked, web.Response):
        return checked
    try:
        detail = await _record_detail(request, _record_id(request))
    except (StoreError, ApiError):
        return render(request, "error.html", status=404, title="Registro não encontrado",
                      message="Não existe registro de abandono com esse número.")
    record: review.AbandonmentRecord = detail["record"]
    parts = record.match_ref.split(":")
    decidable = record.status in (RecordStatus.PENDING, RecordStatus.UPHELD)
    return render(
        request, "operator/abandonment.html", status=status, error=error, record=record,
        detail=detail, timeline=_timeline(record), hands=hand_ids(record), when=_when,
        statuses=STATUS_PT, variants=VARIANT_PT, kinds=KIND_PT, audit_pt=AUDIT_PT,
        kind=parts[0] if len(parts) == 3 else None, table=parts[1] if len(parts) == 3 else None,
        match_number=parts[2] if len(parts) == 3 else None, decidable=decidable,
        can_uphold=record.status is RecordStatus.PENDING
        or (record.appeal_text is not None and not record.appeal_answered),
        done=request.query.get("done"))


async def decision_form(request: web.Request) -> web.StreamResponse:
    checked = _page_operator(request)
    if isinstance(checked, web.Response):
        return checked
    record_id = _record_id(request)
    body = await read_body(request)
    try:
        decision = _decision(body.get("decision"))
        await review.decide(_pool(request), record_id, checked.id, decision, body.get("note"))
    except StoreError as exc:
        return await record_page(request, error=_pt(exc), status=_status_of(exc))
    return _see_other(f"/operator/abandonments/{record_id}?done={decision.value}")


async def audit_page(request: web.Request) -> web.StreamResponse:
    checked = _page_operator(request)
    if isinstance(checked, web.Response):
        return checked
    try:
        before = _int(request.query.get("before"), "before")
    except ApiError:
        before = None
    entries = await review.audit_log(_pool(request), before_id=before, limit=PAGE)
    more = f"?before={entries[-1].id}" if len(entries) == PAGE else None
    return render(request, "operator/audit.html", entries=entries, more=more, when=_when,
                  audit_pt=AUDIT_PT)


def setup(app: web.Application) -> None:
    """The ranked service, its JSON API and its pages (after `server.pages.setup`)."""
    setup_service(app)
    r = app.router
    r.add_get("/api/ranked/queue", api_queue, name="ranked_queue")
    r.add_post("/api/ranked/queue", api_join, name="ranked_join")
    r.add_post("/api/ranked/queue/leave", api_leave, name="ranked_leave")
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
    r.add_get("/ranked", ranked_page, name="ranked_page")
    r.add_post("/ranked/queue", ranked_join_form, name="ranked_join_form")
    r.add_post("/ranked/queue/leave", ranked_leave_form, name="ranked_leave_form")
    r.add_get("/me", me_page, name="me_page")
    r.add_post("/me/abandonments/{record}/appeal", appeal_form, name="appeal_form")
    r.add_get("/leaderboard", leaderboard_page, name="leaderboard_page")
    r.add_get("/arena", arena_page, name="arena_page")
    r.add_post("/arena", arena_create_form, name="arena_create_form")
    r.add_post("/arena/{arena}/join", _arena_form(True), name="arena_join_form")
    r.add_post("/arena/{arena}/leave", _arena_form(False), name="arena_leave_form")
    r.add_get("/operator/abandonments", records_page, name="operator_records_page")
    r.add_get("/operator/abandonments/{record}", record_page, name="operator_record_page")
    r.add_post("/operator/abandonments/{record}/decision", decision_form,
               name="operator_decision_form")
    r.add_get("/operator/audit", audit_page, name="operator_audit_page")
