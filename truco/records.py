"""Hand records and statements of `barajamos-shuffle/v1` (docs/FAIRNESS.md sections 7 and 8).

Pure: build an unsigned record from its parts, parse and validate one with precise reasons
(`RecordError` names the JSON path), hash it, and replay it through the engine. Signing lives in
`verifier.signing` (it needs PyNaCl); everything here is stdlib and the engine.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, TypeVar

from truco.actions import Action, action_from_json, action_to_json
from truco.cards import CANONICAL_DECK, Card, parse_card
from truco.fairness import (
    MAX_CONTRIBUTION_BYTES,
    MAX_HAND_NUMBER,
    MIN_CONTRIBUTION_BYTES,
    SEED_BYTES,
    SHUFFLE_VERSION,
    Contribution,
    canonical_json,
    check_table_id,
    commitment,
    deal_cards,
    derive_deck,
)
from truco.match import apply, forfeit, new_match, start_hand
from truco.outcome import Termination
from truco.state import Deal, MatchState
from truco.variants import MatchConfig, TeamMode, Variant

GENESIS_HASH: Final = bytes(32)
MAX_ACTIONS: Final = 512
MAX_SCORE: Final = 9999
KEY_ID_BYTES: Final = 8
PUBLIC_KEY_BYTES: Final = 32
SIGNATURE_BYTES: Final = 64
SIGNATURE_FIELDS: Final = ("key_id", "public_key", "signature")
# The longest seed chain an anchor may announce (FAIRNESS.md 8): a verifier may have to hash a
# seed down this many times to reach its anchor, so the bound keeps that to about a second.
MAX_SEED_CHAIN_LENGTH: Final = 2**20


class RecordKind(StrEnum):
    HAND = "hand"
    SEED_ANCHOR = "seed_anchor"
    LEDGER_HEAD = "ledger_head"
    KEY_HANDOVER = "key_handover"


class RecordEnd(StrEnum):
    """How a recorded hand ended: by the rules, or by the server ending the match during it."""

    COMPLETED = "completed"
    ABANDONMENT = "abandonment"
    CANCELLED = "cancelled"


class DealerChoice(StrEnum):
    """How this hand's dealer was chosen: the first-dealer draw, or the turn passing on."""

    DRAW = "draw"
    ROTATION = "rotation"


# A value a message quotes (a number, a string, a field name) is cut after this many characters,
# "…" marking the cut: hostile input must not fill a line with a 450-digit number or a long key.
_QUOTED_CHARS: Final = 40
_LONG_VALUE: Final = re.compile(
    "|".join((
        rf"'(?:[^'\\]|\\.){{{_QUOTED_CHARS},}}'",  # a long repr in single quotes
        rf'"(?:[^"\\]|\\.){{{_QUOTED_CHARS},}}"',  # ... or in double quotes
        rf"[^\s'\"]{{{_QUOTED_CHARS + 1},}}",  # a long unquoted run: a number, a list of keys
    ))
)


# and a whole problem (a list of a thousand unknown field names) after this many
_PROBLEM_CHARS: Final = 300


def clip_values(text: str) -> str:
    """`text` with every over-long value in it (quoted or not) cut to a prefix and "…", and
    the whole cut after `_PROBLEM_CHARS` characters."""
    text = _LONG_VALUE.sub(lambda match: match.group()[:_QUOTED_CHARS] + "…", text)
    return text if len(text) <= _PROBLEM_CHARS else text[:_PROBLEM_CHARS] + "…"


class RecordError(ValueError):
    """A record or statement that is not well formed; `path` is where (`$.deal.hands[1]`)."""

    def __init__(self, path: str, problem: str) -> None:
        problem = clip_values(problem)
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class ReplayError(ValueError):
    """The engine does not reproduce the record: an illegal action or a different result."""


@dataclass(frozen=True, slots=True)
class Signature:
    key_id: str
    public_key: bytes
    signature: bytes


@dataclass(frozen=True, slots=True)
class HandRecord:
    table: str
    hand: int
    chain_start: int
    config: MatchConfig
    dealer: int
    dealer_by: DealerChoice
    score_before: tuple[int, int]
    commitment: bytes
    contributions: tuple[Contribution, ...]
    seed: bytes
    deck: tuple[Card, ...]
    deal: Deal
    actions: tuple[Action, ...]
    end: RecordEnd
    forfeit_team: int | None
    score_after: tuple[int, int]
    match_winner: int | None
    prev: bytes
    signed_by: Signature | None


@dataclass(frozen=True, slots=True)
class SeedAnchor:
    table: str
    chain_start: int
    length: int
    anchor: bytes
    signed_by: Signature | None


@dataclass(frozen=True, slots=True)
class TableHead:
    table: str
    hand: int
    hash: bytes


@dataclass(frozen=True, slots=True)
class LedgerHead:
    at: int
    tables: tuple[TableHead, ...]
    signed_by: Signature | None


@dataclass(frozen=True, slots=True)
class KeyHandover:
    at: int
    new_key_id: str
    new_public_key: bytes
    signed_by: Signature | None


Statement = SeedAnchor | LedgerHead | KeyHandover


def key_id_for(public_key: bytes) -> str:
    """FAIRNESS.md 9: the first 8 bytes of SHA-256(public key), as hex."""
    return hashlib.sha256(public_key).digest()[:KEY_ID_BYTES].hex()


def signed_bytes(obj: Mapping[str, Any], *, checked: bool = True) -> bytes:
    """What the signature covers: the canonical JSON of everything but `signature`.

    `checked=False` only for an object parse_record or parse_statement has validated.
    """
    unsigned = {key: value for key, value in obj.items() if key != "signature"}
    return canonical_json(unsigned, checked=checked)


def record_hash(obj: Mapping[str, Any], *, checked: bool = True) -> bytes:
    """SHA-256 of the complete (signed) record's canonical bytes: the next record's `prev`."""
    return hashlib.sha256(canonical_json(dict(obj), checked=checked)).digest()


# ---------------------------------------------------------------------------------------------
# Building


def _score_json(score: Sequence[int]) -> list[int]:
    return [int(score[0]), int(score[1])]


def build_record(
    *,
    table_id: str,
    hand_number: int,
    chain_start: int,
    config: MatchConfig,
    dealer: int,
    dealer_by: DealerChoice,
    score_before: tuple[int, int],
    contributions: Sequence[Contribution],
    seed: bytes,
    actions: Sequence[Action],
    end: RecordEnd,
    forfeit_team: int | None,
    score_after: tuple[int, int],
    match_winner: int | None,
    prev_hash: bytes,
) -> dict[str, Any]:
    """The unsigned record of a hand (sign it with `verifier.signing.sign_record`).

    The deck and the deal are derived here from the seed, so a record can never disagree with
    the published scheme; the result is parsed back to make sure it is well formed.
    """
    deck = derive_deck(seed, table_id, hand_number, contributions)
    deal = deal_cards(deck, config.variant, config.seats, dealer)
    record: dict[str, Any] = {
        "kind": RecordKind.HAND.value,
        "version": SHUFFLE_VERSION,
        "table": table_id,
        "hand": hand_number,
        "chain_start": chain_start,
        "variant": config.variant.value,
        "seats": config.seats,
        "mode": config.mode.value,
        "dealer": {"seat": dealer, "by": DealerChoice(dealer_by).value},
        "score_before": _score_json(score_before),
        "commitment": commitment(seed).hex(),
        "contributions": [None if c is None else c.hex() for c in contributions],
        "seed": seed.hex(),
        "deck": [str(card) for card in deck],
        "deal": _deal_json(deal),
        "actions": [action_to_json(action) for action in actions],
        "end": RecordEnd(end).value,
        "forfeit_team": forfeit_team,
        "score_after": _score_json(score_after),
        "match_winner": match_winner,
        "prev": prev_hash.hex(),
    }
    parse_record(record, signed=False)
    return record


def _deal_json(deal: Deal) -> dict[str, Any]:
    return {
        "hands": [[str(card) for card in hand] for hand in deal.hands],
        "vira": None if deal.vira is None else str(deal.vira),
    }


def build_seed_anchor(
    table_id: str, chain_start: int, length: int, anchor: bytes
) -> dict[str, Any]:
    """The statement published (signed) when a seed chain starts, before its first hand."""
    statement: dict[str, Any] = {
        "kind": RecordKind.SEED_ANCHOR.value,
        "version": SHUFFLE_VERSION,
        "table": table_id,
        "chain_start": chain_start,
        "length": length,
        "anchor": anchor.hex(),
    }
    parse_statement(statement, signed=False)
    return statement


def build_ledger_head(at: int, heads: Mapping[str, tuple[int, bytes]]) -> dict[str, Any]:
    """Each table's latest record (hand number, hash) at unix time `at`, sorted by table id."""
    statement: dict[str, Any] = {
        "kind": RecordKind.LEDGER_HEAD.value,
        "version": SHUFFLE_VERSION,
        "at": at,
        "tables": [
            {"table": table, "hand": hand, "hash": digest.hex()}
            for table, (hand, digest) in sorted(heads.items(), key=lambda item: item[0].encode())
        ],
    }
    parse_statement(statement, signed=False)
    return statement


def build_key_handover(at: int, new_public_key: bytes) -> dict[str, Any]:
    """Key rotation: to be signed by the old key, naming the new one."""
    statement: dict[str, Any] = {
        "kind": RecordKind.KEY_HANDOVER.value,
        "version": SHUFFLE_VERSION,
        "at": at,
        "new_key_id": key_id_for(new_public_key),
        "new_public_key": new_public_key.hex(),
    }
    parse_statement(statement, signed=False)
    return statement


# ---------------------------------------------------------------------------------------------
# Parsing: exact keys, exact types, precise reasons


_E = TypeVar("_E", bound=StrEnum)


def _fields(obj: object, path: str, required: Sequence[str]) -> Mapping[str, Any]:
    if not isinstance(obj, dict):
        raise RecordError(path, f"expected an object, got {json_type(obj)}")
    if len(obj) == len(required) and obj.keys() >= _key_set(required):
        return obj  # exactly the required keys (the common case, checked at C speed)
    missing = [key for key in required if key not in obj]
    if missing:
        raise RecordError(path, f"missing field(s): {', '.join(missing)}")
    unknown = sorted(str(key) for key in obj if key not in required)
    if unknown:
        raise RecordError(path, f"unknown field(s): {', '.join(unknown)}")
    return obj


@functools.lru_cache(maxsize=64)
def _key_set(required: Sequence[str]) -> frozenset[str]:
    return frozenset(required)


def json_type(value: object) -> str:
    """What a parsed JSON value is, in words: `null`, `a string`, `an integer`, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _int(value: object, path: str, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise RecordError(path, f"expected an integer, got {json_type(value)}")
    if not low <= value <= high:
        raise RecordError(path, f"{_quoted_int(value)} is outside {low}..{high}")
    return value


def _quoted_int(value: int) -> str:
    """An integer as a message quotes it: a long one cut to a prefix with its digit count."""
    text = str(value)
    digits = len(text) - text.startswith("-")
    return text if digits <= 20 else f"{text[:20]}… ({digits} digits)"


def _str(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise RecordError(path, f"expected a string, got {json_type(value)}")
    return value


def _list(value: object, path: str, low: int, high: int) -> list[Any]:
    if not isinstance(value, list):
        raise RecordError(path, f"expected a list, got {json_type(value)}")
    if not low <= len(value) <= high:
        size = f"exactly {low}" if low == high else f"{low}..{high}"
        raise RecordError(path, f"expected {size} entries, got {len(value)}")
    return value


def _hex(value: object, path: str, low: int, high: int | None = None) -> bytes:
    text = _str(value, path)
    try:
        data = bytes.fromhex(text)
    except ValueError:
        data = None
    # fromhex also takes uppercase and spaces between bytes: neither is canonical
    if data is None or len(text) != 2 * len(data) or text.lower() != text:
        raise RecordError(path, "expected lowercase hexadecimal, two digits per byte")
    high = low if high is None else high
    if not low <= len(data) <= high:
        expected = f"{low}" if low == high else f"{low}..{high}"
        raise RecordError(path, f"expected {expected} bytes, got {len(data)}")
    return data


def _enum(cls: type[_E], value: object, path: str) -> _E:
    text = _str(value, path)
    try:
        return cls(text)
    except ValueError:
        choices = ", ".join(repr(member.value) for member in cls)
        raise RecordError(path, f"{text!r} is not one of {choices}") from None


_CARDS: Final = {str(card): card for card in CANONICAL_DECK}


def _cards(values: Sequence[object], path: str) -> tuple[Card, ...]:
    """Many cards at once: one dict lookup each (a record has 40 + 13 of them to read)."""
    try:
        return tuple([_CARDS[value] for value in values])  # type: ignore[index]
    except (KeyError, TypeError):
        return tuple(_card(value, f"{path}[{index}]") for index, value in enumerate(values))


# Valid actions by their JSON items: a record repeats a small set of actions (a few hundred
# exist), and parsing each through action_from_json was a third of the verification time.
_ActionKey = tuple[object, ...]
_ACTIONS: dict[_ActionKey, Action] = {}


def _action_key(item: dict[str, Any]) -> _ActionKey | None:
    """A cache key for an action object, None unless every field has its exact JSON type (so
    `"seat": true` can never hit the entry of `"seat": 1`)."""
    seat, verb = item.get("seat"), item.get("do")
    card, covered, position = item.get("card"), item.get("covered"), item.get("position")
    if (
        type(seat) is int
        and type(verb) is str
        and (card is None or type(card) is str)
        and (covered is None or covered is True)
        and (position is None or type(position) is int)
    ):
        return (seat, verb, card, covered, position, len(item))
    return None


def _action(item: object, path: str) -> Action:
    key = _action_key(item) if isinstance(item, dict) else None
    if key is not None:
        cached = _ACTIONS.get(key)
        if cached is not None:
            return cached
    try:
        action = action_from_json(item)
    except ValueError as exc:
        raise RecordError(path, str(exc)) from None
    # FAIRNESS.md 7: a play is in exactly one of two forms, by card (`card`, maybe `"covered":
    # true`) or blind by position (`position` alone: mão de ferro has no covered cards). The
    # scenario format lets a play carry both; a record may not, so its bytes say one thing.
    if action.position is not None:
        if action.card is not None:
            raise RecordError(path, "a play names a 'card' or a 'position', not both")
        if action.covered:
            raise RecordError(
                path, "a blind play (by 'position') is never covered: mão de ferro has no covered"
                " cards"
            )
    canonical = action_to_json(action)
    if canonical != item:
        # One form per action ("covered": false and "position": null are left out), so the
        # signed bytes of an action are unique.
        raise RecordError(path, "not in the scenario format's canonical form (drop defaults)")
    if key is not None:
        _ACTIONS[key] = action
    return action


def _card(value: object, path: str) -> Card:
    text = _str(value, path)  # its RecordError already names the path: not wrapped again below
    try:
        return parse_card(text)
    except ValueError as exc:
        raise RecordError(path, str(exc)) from None


def _team_or_null(value: object, path: str) -> int | None:
    return None if value is None else _int(value, path, 0, 1)


def _score(value: object, path: str) -> tuple[int, int]:
    items = _list(value, path, 2, 2)
    return (_int(items[0], f"{path}[0]", 0, MAX_SCORE), _int(items[1], f"{path}[1]", 0, MAX_SCORE))


def _table(value: object, path: str) -> str:
    text = _str(value, path)
    try:
        check_table_id(text)
    except ValueError as exc:
        raise RecordError(path, str(exc)) from None
    return text


def _version(obj: object, kind: RecordKind) -> None:
    """Version first: a record of another scheme version is refused as such, whatever it holds."""
    if not isinstance(obj, dict):
        raise RecordError("$", f"expected an object, got {json_type(obj)}")
    if "version" not in obj:
        raise RecordError("$", "missing field(s): version")
    version = obj["version"]
    if version != SHUFFLE_VERSION:
        raise RecordError(
            "$.version", f"unknown version {version!r} (this verifier knows {SHUFFLE_VERSION!r})"
        )
    if obj.get("kind") != kind.value:
        raise RecordError("$.kind", f"expected {kind.value!r}, got {obj.get('kind')!r}")


def _signature(obj: Mapping[str, Any], signed: bool) -> Signature | None:
    if not signed:
        return None
    return Signature(
        key_id=_hex(obj["key_id"], "$.key_id", KEY_ID_BYTES).hex(),
        public_key=_hex(obj["public_key"], "$.public_key", PUBLIC_KEY_BYTES),
        signature=_hex(obj["signature"], "$.signature", SIGNATURE_BYTES),
    )


_HAND_FIELDS: Final = (
    "kind", "version", "table", "hand", "chain_start", "variant", "seats", "mode", "dealer",
    "score_before", "commitment", "contributions", "seed", "deck", "deal", "actions", "end",
    "forfeit_team", "score_after", "match_winner", "prev",
)  # fmt: skip


def _with_signature(fields: Sequence[str], signed: bool) -> tuple[str, ...]:
    return (*fields, *SIGNATURE_FIELDS) if signed else tuple(fields)


def record_kind(obj: object) -> RecordKind:
    """What an entry of a chain file is, from its `kind` (RecordError when it has none)."""
    if not isinstance(obj, dict):
        raise RecordError("$", f"expected an object, got {json_type(obj)}")
    if "kind" not in obj:
        raise RecordError("$", "missing field(s): kind")
    return _enum(RecordKind, obj["kind"], "$.kind")


def parse_record(obj: object, *, signed: bool = True) -> HandRecord:
    """Validate a hand record's structure; RecordError names the first problem and where."""
    _version(obj, RecordKind.HAND)
    record = _fields(obj, "$", _with_signature(_HAND_FIELDS, signed))
    table = _table(record["table"], "$.table")
    hand = _int(record["hand"], "$.hand", 1, MAX_HAND_NUMBER)
    chain_start = _int(record["chain_start"], "$.chain_start", 1, hand)
    variant = _enum(Variant, record["variant"], "$.variant")
    seats = _int(record["seats"], "$.seats", 2, 4)
    if seats not in (2, 4):
        raise RecordError("$.seats", f"{seats} is not 2 or 4")
    mode = _enum(TeamMode, record["mode"], "$.mode")
    config = MatchConfig(variant, seats, mode)

    dealer_obj = _fields(record["dealer"], "$.dealer", ("seat", "by"))
    dealer = _int(dealer_obj["seat"], "$.dealer.seat", 0, seats - 1)
    dealer_by = _enum(DealerChoice, dealer_obj["by"], "$.dealer.by")
    score_before = _score(record["score_before"], "$.score_before")
    if dealer_by is DealerChoice.DRAW and score_before != (0, 0):
        raise RecordError("$.score_before", "a match's first hand (dealer drawn) starts at [0, 0]")

    committed = _hex(record["commitment"], "$.commitment", SEED_BYTES)
    contributions: list[Contribution] = []
    for seat, item in enumerate(_list(record["contributions"], "$.contributions", seats, seats)):
        path = f"$.contributions[{seat}]"
        size = (MIN_CONTRIBUTION_BYTES, MAX_CONTRIBUTION_BYTES)
        contributions.append(None if item is None else _hex(item, path, *size))
    seed = _hex(record["seed"], "$.seed", SEED_BYTES)

    deck_items = _list(record["deck"], "$.deck", len(CANONICAL_DECK), len(CANONICAL_DECK))
    deck = _cards(deck_items, "$.deck")
    deal = _parse_deal(record["deal"], seats, variant, dealer)

    actions: list[Action] = []
    for index, item in enumerate(_list(record["actions"], "$.actions", 0, MAX_ACTIONS)):
        path = f"$.actions[{index}]"
        action = _action(item, path)
        if action.seat >= seats:
            raise RecordError(f"{path}.seat", f"seat {action.seat} does not exist at {seats} seats")
        actions.append(action)

    end = _enum(RecordEnd, record["end"], "$.end")
    forfeit_team = _team_or_null(record["forfeit_team"], "$.forfeit_team")
    if (end is RecordEnd.ABANDONMENT) != (forfeit_team is not None):
        raise RecordError(
            "$.forfeit_team", "names the abandoning team exactly when end is 'abandonment'"
        )
    score_after = _score(record["score_after"], "$.score_after")
    match_winner = _team_or_null(record["match_winner"], "$.match_winner")
    prev = _hex(record["prev"], "$.prev", 32)
    return HandRecord(
        table=table,
        hand=hand,
        chain_start=chain_start,
        config=config,
        dealer=dealer,
        dealer_by=dealer_by,
        score_before=score_before,
        commitment=committed,
        contributions=tuple(contributions),
        seed=seed,
        deck=deck,
        deal=deal,
        actions=tuple(actions),
        end=end,
        forfeit_team=forfeit_team,
        score_after=score_after,
        match_winner=match_winner,
        prev=prev,
        signed_by=_signature(record, signed),
    )


def _parse_deal(value: object, seats: int, variant: Variant, dealer: int) -> Deal:
    deal_obj = _fields(value, "$.deal", ("hands", "vira"))
    hands: list[tuple[Card, Card, Card]] = []
    for seat, hand in enumerate(_list(deal_obj["hands"], "$.deal.hands", seats, seats)):
        path = f"$.deal.hands[{seat}]"
        cards = _cards(_list(hand, path, 3, 3), path)
        hands.append((cards[0], cards[1], cards[2]))
    vira_value = deal_obj["vira"]
    if variant is Variant.PAULISTA:
        vira: Card | None = _card(vira_value, "$.deal.vira")
    elif vira_value is not None:
        raise RecordError("$.deal.vira", f"{variant.value} has no vira: expected null")
    else:
        vira = None
    try:
        return Deal(dealer=dealer, hands=tuple(hands), vira=vira)
    except ValueError as exc:
        raise RecordError("$.deal", str(exc)) from None


_STATEMENT_FIELDS: Final[dict[RecordKind, tuple[str, ...]]] = {
    RecordKind.SEED_ANCHOR: ("kind", "version", "table", "chain_start", "length", "anchor"),
    RecordKind.LEDGER_HEAD: ("kind", "version", "at", "tables"),
    RecordKind.KEY_HANDOVER: ("kind", "version", "at", "new_key_id", "new_public_key"),
}
_MAX_TIME: Final = 2**53 - 1
_MAX_LEDGER_TABLES: Final = 100_000


def parse_statement(obj: object, *, signed: bool = True) -> Statement:
    """Validate a seed-anchor, ledger-head or key hand-over statement."""
    kind = record_kind(obj)
    if kind is RecordKind.HAND:
        raise RecordError("$.kind", "a hand record is not a statement")
    _version(obj, kind)
    statement = _fields(obj, "$", _with_signature(_STATEMENT_FIELDS[kind], signed))
    signature = _signature(statement, signed)
    if kind is RecordKind.SEED_ANCHOR:
        chain_start = _int(statement["chain_start"], "$.chain_start", 1, MAX_HAND_NUMBER)
        return SeedAnchor(
            table=_table(statement["table"], "$.table"),
            chain_start=chain_start,
            length=_int(statement["length"], "$.length", 1, MAX_SEED_CHAIN_LENGTH),
            anchor=_hex(statement["anchor"], "$.anchor", SEED_BYTES),
            signed_by=signature,
        )
    at = _int(statement["at"], "$.at", 0, _MAX_TIME)
    if kind is RecordKind.LEDGER_HEAD:
        heads: list[TableHead] = []
        items = _list(statement["tables"], "$.tables", 0, _MAX_LEDGER_TABLES)
        for index, item in enumerate(items):
            path = f"$.tables[{index}]"
            head = _fields(item, path, ("table", "hand", "hash"))
            heads.append(
                TableHead(
                    table=_table(head["table"], f"{path}.table"),
                    hand=_int(head["hand"], f"{path}.hand", 1, MAX_HAND_NUMBER),
                    hash=_hex(head["hash"], f"{path}.hash", 32),
                )
            )
        names = [head.table.encode() for head in heads]
        if names != sorted(set(names)):
            raise RecordError("$.tables", "tables must be sorted by id, each once")
        return LedgerHead(at=at, tables=tuple(heads), signed_by=signature)
    new_public_key = _hex(statement["new_public_key"], "$.new_public_key", PUBLIC_KEY_BYTES)
    new_key_id = _hex(statement["new_key_id"], "$.new_key_id", KEY_ID_BYTES).hex()
    if new_key_id != key_id_for(new_public_key):
        raise RecordError("$.new_key_id", "is not the key id of new_public_key")
    return KeyHandover(
        at=at, new_key_id=new_key_id, new_public_key=new_public_key, signed_by=signature
    )


# ---------------------------------------------------------------------------------------------
# Replay


def replay(record: HandRecord) -> MatchState:
    """Run the hand through the engine; ReplayError says which action or result disagrees.

    Every action must be legal when it comes, a completed hand must be over after the last one,
    an abandoned or cancelled one must still be in play after it (the rules had not ended it) and
    ends the match by the recorded forfeit, and the final score and winner must be the recorded
    ones.
    """
    try:
        state = new_match(record.config, first_dealer=record.dealer, score=record.score_before)
        state, _ = start_hand(state, record.deal)
    except ValueError as exc:
        raise ReplayError(f"the engine refuses to deal this hand: {exc}") from None
    for index, action in enumerate(record.actions):
        try:
            state, _ = apply(state, action)
        except ValueError as exc:
            reason = getattr(exc, "reason", None)
            code = f" [{reason}]" if reason is not None else ""
            raise ReplayError(
                f"action {index} {action_to_json(action)} is illegal{code}: {exc}"
            ) from None
    if record.end is RecordEnd.COMPLETED:
        if not state.hand_over:
            raise ReplayError(
                f"the record says the hand was completed, but after {len(record.actions)}"
                " action(s) it is still in progress"
            )
    else:
        if state.outcome is not None:
            raise ReplayError(f"the match was already over before the {record.end.value}")
        if state.hand_over:
            # FAIRNESS.md 7: a hand the rules ended is "completed"; the match ends with the
            # next hand, not with one already finished
            raise ReplayError(
                f"the record's end is {record.end.value!r}, but its {len(record.actions)}"
                " action(s) had already finished the hand by the rules: a hand the rules"
                " ended is 'completed'"
            )
        termination = (
            Termination.ABANDONMENT
            if record.end is RecordEnd.ABANDONMENT
            else Termination.CANCELLED
        )
        # A cancellation has no guilty team; the engine's forfeit ignores the team for it.
        team = record.forfeit_team if record.forfeit_team is not None else 0
        state = forfeit(state, team, termination)
    if state.score != record.score_after:
        raise ReplayError(
            f"the replay scores {list(state.score)}, the record says {list(record.score_after)}"
        )
    if state.match_winner != record.match_winner:
        raise ReplayError(
            f"the replay's match winner is {state.match_winner}, the record says"
            f" {record.match_winner}"
        )
    return state
