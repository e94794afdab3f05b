"""The published shuffle `barajamos-shuffle/v1` (docs/FAIRNESS.md), as pure functions.

Everything here is a function of its arguments: the server draws seeds from the OS CSPRNG and
collects the players' contributions, then calls these to commit, derive the deck, deal it and draw
the first dealer. The verifier calls the very same functions, so there is one implementation of
the scheme, cross-checked in the tests by a deliberately naive one written from the spec page.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import itertools
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, cast

from truco.cards import CANONICAL_DECK, Card
from truco.state import Deal
from truco.variants import Variant

SHUFFLE_VERSION: Final = "barajamos-shuffle/v1"
SEED_BYTES: Final = 32
MIN_CONTRIBUTION_BYTES: Final = 1
MAX_CONTRIBUTION_BYTES: Final = 256
MAX_TABLE_ID_BYTES: Final = 128
MAX_HAND_NUMBER: Final = 2**32 - 1
SEAT_COUNTS: Final = (2, 4)
HAND_SIZE: Final = 3
# JavaScript numbers are doubles: beyond this an integer would not survive a browser round trip.
MAX_JSON_INTEGER: Final = 2**53 - 1

# A seat's contribution: the bytes it sent, or None when it sent nothing (never replaced).
Contribution = bytes | None


class StreamLabel(StrEnum):
    """Domain-separation labels of the two HMAC byte streams derived from a hand's seed."""

    DECK = "deck"
    FIRST_DEALER = "first-dealer"


@dataclass(frozen=True, slots=True)
class Rejection:
    """A stream byte thrown away by rejection sampling (kept for the known-answer vectors)."""

    stream: StreamLabel
    offset: int  # position of the byte in the stream, 0-based
    byte: int
    modulus: int  # the draw was uniform in [0, modulus - 1]
    bound: int  # bytes at or above this are rejected


@dataclass(frozen=True, slots=True)
class ShuffleTrace:
    deck: tuple[Card, ...]
    bytes_read: int
    rejections: tuple[Rejection, ...]


def commitment(seed: bytes) -> bytes:
    """The published commitment to a hand's seed: SHA-256(seed), also the chain's previous link."""
    _check_seed(seed)
    return hashlib.sha256(seed).digest()


def seed_chain(tip: bytes, length: int) -> tuple[bytes, ...]:
    """(s_0, s_1, ..., s_length) with s_(i-1) = SHA-256(s_i) and s_length = tip: anchor first.

    Element i is the seed of the chain's i-th hand and element i - 1 its commitment.
    """
    _check_seed(tip)
    if not isinstance(length, int) or isinstance(length, bool) or length < 1:
        raise ValueError(f"a seed chain needs a length of at least 1, not {length!r}")
    chain = [tip]
    for _ in range(length):
        chain.append(hashlib.sha256(chain[-1]).digest())
    chain.reverse()
    return tuple(chain)


def _u32(value: int) -> bytes:
    return value.to_bytes(4, "big")


def _length_prefixed(data: bytes) -> bytes:
    return _u32(len(data)) + data


_VERSION_FIELD: Final = _length_prefixed(SHUFFLE_VERSION.encode("ascii"))


def _check_seed(seed: bytes) -> None:
    if not isinstance(seed, bytes) or len(seed) != SEED_BYTES:
        raise ValueError(f"a seed is exactly {SEED_BYTES} bytes")


_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")


def check_table_id(table_id: str) -> bytes:
    """The table id's UTF-8 bytes, or ValueError when it is not a usable table id."""
    if not isinstance(table_id, str):
        raise ValueError("the table id must be a string")
    try:
        encoded = table_id.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("the table id is not valid Unicode text") from exc
    if not 1 <= len(encoded) <= MAX_TABLE_ID_BYTES:
        raise ValueError(f"the table id must be 1..{MAX_TABLE_ID_BYTES} UTF-8 bytes")
    if _CONTROL.search(table_id):
        raise ValueError("the table id may not contain control characters")
    return encoded


def check_hand_number(hand_number: int) -> None:
    if (
        not isinstance(hand_number, int)
        or isinstance(hand_number, bool)
        or not 1 <= hand_number <= MAX_HAND_NUMBER
    ):
        raise ValueError(f"the hand number must be an integer in 1..{MAX_HAND_NUMBER}")


def check_seats(seats: int) -> None:
    if seats not in SEAT_COUNTS or isinstance(seats, bool):
        raise ValueError(f"seats must be 2 or 4, not {seats!r}")


def check_contribution(contribution: Contribution) -> None:
    if contribution is None:
        return
    if not isinstance(contribution, bytes):
        raise ValueError("a contribution is bytes, or None when the seat sent nothing")
    if not MIN_CONTRIBUTION_BYTES <= len(contribution) <= MAX_CONTRIBUTION_BYTES:
        raise ValueError(
            f"a contribution is {MIN_CONTRIBUTION_BYTES}..{MAX_CONTRIBUTION_BYTES} bytes,"
            f" not {len(contribution)}"
        )


def _contributions_field(contributions: Sequence[Contribution], seats: int) -> bytes:
    check_seats(seats)
    if not isinstance(contributions, (list, tuple)):
        raise ValueError("contributions are a list: one entry (bytes, or None) per seat")
    if len(contributions) != seats:
        raise ValueError(
            f"expected one contribution (or None) per seat: {seats}, not {len(contributions)}"
        )
    parts = [_SEAT_COUNT_BYTE[seats]]
    for contribution in contributions:
        # 0x00 = absent, 0x01 + length-prefixed bytes = present: absent never equals any bytes.
        if contribution is None:
            parts.append(b"\x00")
        elif type(contribution) is bytes and 0 < len(contribution) <= MAX_CONTRIBUTION_BYTES:
            parts.append(b"\x01" + _length_prefixed(contribution))
        else:
            check_contribution(contribution)  # raises, saying what is wrong
            raise ValueError(f"a contribution is bytes, not {type(contribution).__name__}")
    return b"".join(parts)


_SEAT_COUNT_BYTE: Final = {seats: bytes([seats]) for seats in SEAT_COUNTS}


def _seat_count(contributions: Sequence[Contribution]) -> int:
    try:
        return len(contributions)
    except TypeError:
        raise ValueError("contributions are a list: one entry (bytes, or None) per seat") from None


_DECK_PREFIX: Final = _VERSION_FIELD + _length_prefixed(StreamLabel.DECK.encode("ascii"))
_FIRST_DEALER_PREFIX: Final = _VERSION_FIELD + _length_prefixed(
    StreamLabel.FIRST_DEALER.encode("ascii")
)


def _table_field(table_id: str) -> bytes:
    if not isinstance(table_id, str):
        raise ValueError("the table id must be a string")
    return _checked_table_field(table_id)


@functools.lru_cache(maxsize=4096)
def _checked_table_field(table_id: str) -> bytes:
    # Cached: a table derives thousands of decks and its id is checked and encoded once.
    return _length_prefixed(check_table_id(table_id))


def deck_message(table_id: str, hand_number: int, contributions: Sequence[Contribution]) -> bytes:
    """M("deck") of FAIRNESS.md 5.1: what the seed keys to produce the deck's byte stream."""
    check_hand_number(hand_number)
    return (
        _DECK_PREFIX
        + _table_field(table_id)
        + _u32(hand_number)
        + _contributions_field(contributions, _seat_count(contributions))
    )


def first_dealer_message(table_id: str, contributions: Sequence[Contribution], seats: int) -> bytes:
    """M("first-dealer"): no hand number, the seed of the match's first hand is unique already."""
    return (
        _FIRST_DEALER_PREFIX + _table_field(table_id) + _contributions_field(contributions, seats)
    )


# bound[m]: the largest multiple of m not above 256; bytes at or above it are rejected.
_BOUNDS: Final = (0, *(256 - 256 % m for m in range(1, 257)))
# The Fisher-Yates steps: position i from 39 down to 1, drawing j uniform in [0, i] inclusive
# (excluding i itself would be Sattolo's algorithm: a single cycle, never a fixed point).
_STEPS: Final = tuple((i, i + 1, _BOUNDS[i + 1]) for i in range(len(CANONICAL_DECK) - 1, 0, -1))


def _stream(seed: bytes, message: bytes, eager_blocks: int) -> Iterator[int]:
    """The bytes of HMAC-SHA256(seed, message || u32(0)) || HMAC(seed, message || u32(1)) || ...

    Endless: the first `eager_blocks` blocks are computed at once (what the caller almost always
    reads), any further block on demand. Iterating over the bytes stays in C, which matters:
    this is the hot path of every deal and every verification.
    """
    _check_seed(seed)
    keyed = hmac.new(seed, message, "sha256")  # the message prefix is hashed once per stream
    eager = b"".join([_block(keyed, counter) for counter in range(eager_blocks)])
    return itertools.chain(eager, _blocks_from(keyed, eager_blocks))


def _block(keyed: hmac.HMAC, counter: int) -> bytes:
    mac = keyed.copy()
    mac.update(_u32(counter))
    return mac.digest()


def _blocks_from(keyed: hmac.HMAC, first: int) -> Iterator[int]:
    for counter in itertools.count(first):
        yield from _block(keyed, counter)


# A shuffle reads 39 accepted bytes plus the rejected ones (about 1.5 on average): two blocks,
# except when more than 25 of its bytes are rejected. A first-dealer draw reads one byte.
_SHUFFLE_BLOCKS: Final = 2
_DRAW_BLOCKS: Final = 1


def _redraw(
    stream: Iterator[int],
    byte: int,
    modulus: int,
    label: StreamLabel,
    rejections: list[Rejection] | None,
    offset: int,
) -> int:
    """Finish a uniform draw in [0, modulus - 1] whose byte `byte` (at stream position `offset`)
    may be rejected: read on until a byte is below the bound (no modulo bias, no floats)."""
    bound = _BOUNDS[modulus]
    while byte >= bound:
        if rejections is not None:
            rejections.append(Rejection(label, offset, byte, modulus, bound))
        offset += 1
        byte = next(stream)
    return byte % modulus


def _shuffle(
    seed: bytes,
    table_id: str,
    hand_number: int,
    contributions: Sequence[Contribution],
    rejections: list[Rejection] | None,
) -> tuple[Card, ...]:
    stream = _stream(seed, deck_message(table_id, hand_number, contributions), _SHUFFLE_BLOCKS)
    deck = list(CANONICAL_DECK)
    last = len(deck) - 1
    # zip reads one stream byte per step (in C); a rejected byte makes _redraw read more from the
    # same iterator, so the next step continues right after it.
    # (no strict=: the stream is endless, and the keyword measurably slows the loop on 3.11)
    for (i, modulus, bound), byte in zip(_STEPS, stream):  # noqa: B905
        if byte < bound:
            j = byte % modulus
        else:
            # stream position of this byte: one accepted byte per earlier step, plus the rejected
            offset = last - i + (len(rejections) if rejections is not None else 0)
            j = _redraw(stream, byte, modulus, StreamLabel.DECK, rejections, offset)
        deck[i], deck[j] = deck[j], deck[i]
    return tuple(deck)


def derive_deck(
    seed: bytes, table_id: str, hand_number: int, contributions: Sequence[Contribution]
) -> tuple[Card, ...]:
    """The hand's 40 cards, top first: Fisher-Yates driven by the seed-keyed HMAC stream."""
    return _shuffle(seed, table_id, hand_number, contributions, None)


def shuffle_trace(
    seed: bytes, table_id: str, hand_number: int, contributions: Sequence[Contribution]
) -> ShuffleTrace:
    """The deck with what a re-implementer needs to debug: bytes read and rejected bytes."""
    rejections: list[Rejection] = []
    deck = _shuffle(seed, table_id, hand_number, contributions, rejections)
    return ShuffleTrace(deck, len(_STEPS) + len(rejections), tuple(rejections))


def draw_first_dealer(
    seed: bytes, table_id: str, contributions: Sequence[Contribution], seats: int
) -> int:
    """The match's first dealer, uniform over the seats, from the first hand's committed seed."""
    stream = _stream(seed, first_dealer_message(table_id, contributions, seats), _DRAW_BLOCKS)
    return _redraw(stream, next(stream), seats, StreamLabel.FIRST_DEALER, None, 0)


_ALL_CARDS: Final = frozenset(CANONICAL_DECK)


def deal_cards(deck: Sequence[Card], variant: Variant, seats: int, dealer: int) -> Deal:
    """Deal RULES.md's way: one card at a time from mano, three passes, then the vira (Paulista)."""
    check_seats(seats)
    if set(deck) != _ALL_CARDS or len(deck) != len(CANONICAL_DECK):
        raise ValueError("a deck is the 40 distinct cards")
    if not isinstance(dealer, int) or isinstance(dealer, bool) or not 0 <= dealer < seats:
        raise ValueError(f"the dealer must be a seat 0..{seats - 1}, not {dealer!r}")
    mano = (dealer + 1) % seats
    hands: list[list[Card]] = [[] for _ in range(seats)]
    for deal_pass in range(HAND_SIZE):
        for place in range(seats):
            hands[(mano + place) % seats].append(deck[deal_pass * seats + place])
    vira = deck[HAND_SIZE * seats] if Variant(variant) is Variant.PAULISTA else None
    return Deal(
        dealer=dealer,
        hands=tuple((hand[0], hand[1], hand[2]) for hand in hands),
        vira=vira,
    )


def _json_problem(value: object, path: str) -> str | None:
    """Where and why `value` cannot be canonical JSON, or None when it can.

    Scalars inside containers are checked inline: this walk runs for every record signed or
    verified, and a call per leaf would cost more than the encoding itself.
    """
    items: Iterable[tuple[object, object]]
    if isinstance(value, dict):
        items = value.items()
        is_object = True
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
        is_object = False
    else:
        return _scalar_problem(value, path)
    for key, item in items:
        if is_object and not (isinstance(key, str) and key.isascii()):
            return f"{path}: object keys must be ASCII strings, not {key!r}"
        item_kind = type(item)
        if item_kind is str or item is None or item_kind is bool:
            continue
        if item_kind is int and -MAX_JSON_INTEGER <= cast(int, item) <= MAX_JSON_INTEGER:
            continue
        child = f"{path}.{key}" if is_object else f"{path}[{key}]"
        problem = _json_problem(item, child)
        if problem is not None:
            return problem
    return None


def _scalar_problem(value: object, path: str) -> str | None:
    if value is None or isinstance(value, (bool, str)):
        return None
    if isinstance(value, int):
        if abs(value) > MAX_JSON_INTEGER:
            return f"{path}: integer {value} is beyond 2^53 - 1"
        return None
    return f"{path}: {type(value).__name__} is not allowed in canonical JSON"


def canonical_json(obj: object, *, checked: bool = True) -> bytes:
    """FAIRNESS.md section 6: UTF-8, sorted ASCII keys, no whitespace, integers only.

    json.dumps with ensure_ascii=False escapes exactly what ECMAScript's JSON.stringify escapes,
    so a browser produces the same bytes. `checked=False` skips the type walk, for objects a
    strict parser has just validated (a verified record is encoded twice: signature and hash).
    """
    if checked:
        problem = _json_problem(obj, "$")
        if problem is not None:
            raise ValueError(problem)
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("canonical JSON cannot hold unpaired surrogates") from exc
