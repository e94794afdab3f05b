"""What each seat (or an observer) may see: one function decides, everything else asks it.

`_seen_hands` says whose dealt cards a viewer may see; `_sees_play` says whether a card on the
table is face up for the viewer. `view` renders only through them and `hidden_cards_for` is
their complement, so a test over `hidden_cards_for` covers every view. `_sees_vote` says whose
votes on a pending answer a viewer may read: `view` and `events_json` render votes through it.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from truco.actions import ActionKind, action_to_json
from truco.cards import CANONICAL_DECK, CARD_NAMES, Card
from truco.envido import accepted_points, chain_name, declined_points
from truco.events import Event, VoteCast
from truco.match import legal_actions, pending
from truco.outcome import Termination
from truco.state import (
    HandEnd,
    HandKind,
    HandState,
    MatchState,
    PendingKind,
    Phase,
    Play,
    RequestKind,
)
from truco.variants import TeamMode, Variant, VariantRules

# bound once: Python 3.11 reads `Enum.MEMBER` through a descriptor
_NORMAL, _ONZE, _FERRO = HandKind.NORMAL, HandKind.ONZE, HandKind.FERRO
_TRUCO, _ENVIDO = RequestKind.TRUCO, RequestKind.ENVIDO

# the stable code of every enum member a view prints. `Enum.value` is a descriptor too, slow
# where a view reads it per player and per action; a StrEnum member hashes and compares as its
# code, so this is one dictionary look-up (members of two enums sharing a code map alike)
_CODE: dict[StrEnum, str] = {
    member: member.value
    for enum in (
        Variant, TeamMode, Phase, PendingKind, HandKind, HandEnd, RequestKind, Termination,
        ActionKind,
    )
    for member in enum
}


def _shown_seat(hand: HandState) -> int | None:
    """Whose cards the hand shows everyone: the accepted envido's winner, at the end of the hand
    (Argentino); None while none are."""
    envido = hand.envido
    if hand.result is None or envido is None or envido.result is None:
        return None
    return envido.result.winner_seat


def _seen_hands(hand: HandState, viewer: int | None) -> list[bool]:
    """Per owner (seat): may `viewer` see the cards it holds? Asked once per viewer, for all
    owners at once: a view asks about every seat."""
    setup = hand.setup
    seen = [False] * setup.seats
    shown = _shown_seat(hand)
    if shown is not None:
        seen[shown] = True
    if viewer is not None:
        if setup.special_team == viewer & 1:
            # the team at onze / dez sees the partner's cards, for that hand only
            for partner in range(viewer & 1, setup.seats, 2):
                seen[partner] = True
        # mão de ferro is played blind: not even one's own cards
        seen[viewer] = setup.kind is not _FERRO
    return seen


def _sees_vote(viewer: int | None, voter: int) -> bool:
    """May `viewer` read how `voter` voted? Partners agree on an answer by their votes, which is
    partner talk (RULES.md: signals go to the partner only): the other team and observers learn
    that a vote was cast, and then the team's answer, never who wanted what."""
    return viewer is not None and (viewer ^ voter) & 1 == 0


def events_json(events: Iterable[Event], viewer: int | None) -> list[dict[str, Any]]:
    """The events of one step as `viewer` may read them (a vote's verb only to the voter's
    team)."""
    out = []
    for event in events:
        data = event.to_json()
        if isinstance(event, VoteCast) and not _sees_vote(viewer, event.seat):
            data["vote"] = None
        out.append(data)
    return out


def _sees_play(hand: HandState, viewer: int | None, play: Play) -> bool:
    # a covered card's face is known to its owner only, during and after the hand
    return not play.covered or viewer == play.seat


def visible_cards(state: MatchState, seat: int | None) -> frozenset[Card]:
    hand = state.hand
    if hand is None:
        return frozenset()
    seen: set[Card] = set()
    if hand.vira is not None:
        seen.add(hand.vira)
    shown = _shown_seat(hand)
    for owner, sees in enumerate(_seen_hands(hand, seat)):
        if owner == shown:
            seen.update(hand.hands[owner])
        elif sees:
            # the cards still in hand; played ones count as the table shows them (covered: no)
            seen.update(hand.hands[owner][p] for p in hand.remaining(owner))
    for plays in (*(r.plays for r in hand.rounds), hand.table):
        seen.update(play.card for play in plays if _sees_play(hand, seat, play))
    return frozenset(seen)


def hidden_cards_for(state: MatchState, seat: int | None) -> frozenset[Card]:
    """Every card `seat` (None: an observer) may not see now."""
    _check_viewers(state, (seat,))
    return frozenset(CANONICAL_DECK) - visible_cards(state, seat)


def _check_viewers(state: MatchState, viewers: Iterable[int | None]) -> None:
    seats = state.config.seats
    for seat in viewers:
        if seat is not None and (type(seat) is not int or not 0 <= seat < seats):
            raise ValueError(f"no seat {seat!r} at this table")


def _plays_json(
    hand: HandState, viewer: int | None, plays: tuple[Play, ...]
) -> list[dict[str, Any]]:
    """Cards on the table as `viewer` sees them: a covered one's face only where `_sees_play`."""
    # loops, not comprehensions, for these lists of a few items: in Python 3.11 a comprehension
    # is a function call of its own, a good part of the cost here
    out = []
    for play in plays:
        face = CARD_NAMES[play.card.index] if _sees_play(hand, viewer, play) else None
        out.append({"seat": play.seat, "card": face, "covered": play.covered})
    return out


# an owner's hand as the table shows it: the cards it was dealt, the positions it has not played
# yet, and whether it is still in the hand (not gone to the mazo)
_Place = tuple[tuple[Card, ...], tuple[int, ...], bool]


def _player_json(owner: int, place: _Place, sees: bool, shown: bool) -> dict[str, Any]:
    """`owner`'s place at the table for a viewer who `sees` its cards or does not; `shown`: the
    hand shows them (`_shown_seat`)."""
    cards, remaining, in_hand = place
    # positions stay visible (blind play picks one); faces only where the viewer may see
    slots = []
    for p in remaining:  # a loop: see `_plays_json`
        slots.append({"position": p, "card": CARD_NAMES[cards[p].index] if sees else None})
    out: dict[str, Any] = {
        "seat": owner,
        "team": owner & 1,
        "in_hand": in_hand,
        "cards_left": len(remaining),
        "hand": slots,
    }
    if sees and shown:
        out["shown"] = [CARD_NAMES[card.index] for card in cards]
    return out


def _request_json(state: MatchState, hand: HandState) -> dict[str, Any] | None:
    request = hand.request
    if request is None:
        return None
    rules = state.config.rules
    truco = hand.bet.truco
    out: dict[str, Any]
    if request is _TRUCO:
        assert truco is not None
        out = {
            "kind": _CODE[request],
            "answering_team": hand.answering_team,
            "seat": truco.seat,
            "team": truco.team,
            "in_answer": truco.in_answer,
            "value": rules.ladder[truco.level],
            "name": rules.raise_names[truco.level - 1],
        }
    elif request is _ENVIDO:
        envido = hand.envido
        assert envido is not None
        chain, score, target = envido.chain, state.score, rules.target
        out = {
            "kind": _CODE[request],
            "answering_team": hand.answering_team,
            "seat": envido.seat,
            "team": envido.team,
            "in_answer": envido.in_answer,
            "chain": chain_name(chain),
            # what quiero gives the best tanto, and no quiero the calling team (RULES.md)
            "accepted_points": accepted_points(chain, score, target),
            "declined_points": declined_points(chain, score, target),
        }
        if truco is not None:
            out["truco_waiting"] = rules.ladder[truco.level]
    else:
        out = {
            "kind": _CODE[request],
            "answering_team": hand.answering_team,
            "name": rules.special_name,
            "value": rules.special_value,
        }
    return out


def _next_raise(rules: VariantRules, hand: HandState) -> dict[str, Any] | None:
    """The ladder step a `raise` would ask for now (name and value), or None at the top and in
    a hand that has no raises (mão de onze / dez, mão de ferro). Over a truco still waiting for
    its answer (also behind an envido answered first), it is the step above that truco."""
    if hand.setup.kind is not _NORMAL:
        return None
    bet = hand.bet
    asked = bet.truco.level if bet.truco else bet.level
    step = asked + 1
    if step > rules.top_level:
        return None
    return {"name": rules.raise_names[step - 1], "value": rules.ladder[step]}


# (variant, vira index) -> the manilhas' names: at most 41 per variant, and every view lists them
_MANILHAS: dict[tuple[Variant, int | None], tuple[str, ...]] = {}


def _manilha_names(rules: VariantRules, vira: Card | None) -> tuple[str, ...]:
    """The manilhas' names for this vira (`rules.manilhas`), looked up once."""
    key = (rules.variant, None if vira is None else vira.index)
    names = _MANILHAS.get(key)
    if names is None:
        names = _MANILHAS[key] = tuple(CARD_NAMES[card.index] for card in rules.manilhas(vira))
    return names


def _hand_shared(state: MatchState, hand: HandState) -> dict[str, Any]:
    """The hand's fields that read the same for every viewer, in their order; `rounds`, `table`
    and `players` come per viewer (see `_HandViews`) and are left None here."""
    rules = state.config.rules
    setup, bet, result = hand.setup, hand.bet, hand.result
    envido: dict[str, Any] | None = None
    if hand.envido is not None:
        chained = hand.envido.result
        envido = {
            "chain": chain_name(hand.envido.chain),
            "result": None
            if chained is None
            else {
                "accepted": chained.accepted,
                "winner_team": chained.winner_team,
                "winner_seat": chained.winner_seat,
                "points": chained.points,
                "tantos": [{"seat": s, "tanto": t} for s, t in chained.tantos],
            },
        }
    vira, votes = setup.vira, hand.votes
    answering = hand.answering_team
    return {
        "next_raise": _next_raise(rules, hand),
        "kind": _CODE[setup.kind],
        "special_name": rules.special_name if setup.kind is _ONZE else None,
        "dealer": setup.dealer,
        "mano": setup.mano,
        "vira": None if vira is None else CARD_NAMES[vira.index],
        "manilhas": list(_manilha_names(rules, vira)),
        "value": bet.stake,
        "raise_team": bet.raise_team,
        "round": len(hand.rounds),
        "turn": hand.turn if result is None and answering is None else None,
        "rounds": None,
        "table": None,
        "players": None,
        "request": _request_json(state, hand),
        # mostly nobody has voted (a vote is a non-empty code, None is not)
        "votes": {str(s): _CODE[vote] for s, vote in enumerate(votes) if vote is not None}
        if any(votes)
        else {},
        "envido": envido,
        "result": None
        if result is None
        else {
            "winner_team": result.winner_team,
            "points": result.points,
            "reason": _CODE[result.reason],
        },
    }


class _HandViews:
    """One hand as several viewers see it: what reads alike is built once and shared.

    Only covered cards (face known to their owner) make the played cards differ per viewer: a
    viewer who covered none reads them as an observer does. Only whether a viewer sees an
    owner's cards makes a player's entry differ: each owner's entry is built at most twice
    (seen, unseen), whatever the number of viewers.
    """

    __slots__ = (
        "_players", "_plays", "covering", "hand", "places", "shared", "shown_seat", "voted"
    )

    def __init__(self, state: MatchState, hand: HandState) -> None:
        self.hand = hand
        self.shared = _hand_shared(state, hand)
        # (key, seat, verb) of each vote cast, for `_sees_vote` per viewer
        votes: dict[str, str] = self.shared["votes"]
        self.voted = [(voter, int(voter), verb) for voter, verb in votes.items()] if votes else []
        self.shown_seat = _shown_seat(hand)
        # per owner: its cards, unplayed positions and presence (`_Place`), read by both entries
        self.places: list[_Place] = []
        for owner, cards in enumerate(hand.setup.hands):  # a loop: see `_plays_json`
            self.places.append((cards, hand.remaining(owner), hand.in_hand(owner)))
        # the seats that covered a card: only they see its face
        self.covering: set[int] = set()
        for r in hand.rounds:
            self._note_covered(r.plays)
        self._note_covered(hand.table)
        self._plays: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
        # owner o's entry as seen at index 2 * o + 1, unseen at 2 * o; built on first need
        self._players: list[dict[str, Any] | None] = [None] * (2 * hand.setup.seats)

    def _note_covered(self, plays: tuple[Play, ...]) -> None:
        """Add to `covering` the seats of `plays`' covered cards."""
        for play in plays:
            if play.covered:
                self.covering.add(play.seat)

    def _played(self, viewer: int | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        hand = self.hand
        rounds = [
            {
                "plays": _plays_json(hand, viewer, r.plays),
                "winner_team": r.winner_team,
                "winner_seat": r.winner_seat,
                "tied": r.winner_team is None,
            }
            for r in hand.rounds
        ]
        return rounds, _plays_json(hand, viewer, hand.table)

    def for_viewer(self, viewer: int | None) -> dict[str, Any]:
        hand = self.hand
        if viewer in self.covering:
            rounds, table = self._played(viewer)
        else:
            if self._plays is None:
                self._plays = self._played(None)
            rounds, table = self._plays
        players = []
        built = self._players
        for owner, sees in enumerate(_seen_hands(hand, viewer)):
            slot = 2 * owner + sees
            entry = built[slot]
            if entry is None:
                entry = built[slot] = _player_json(
                    owner, self.places[owner], sees, owner == self.shown_seat
                )
            players.append(entry)
        # a copy keeps the shared fields' order; the per-viewer ones replace their placeholders
        shown = self.shared.copy()
        shown["rounds"] = rounds
        shown["table"] = table
        shown["players"] = players
        voted = self.voted
        if voted and not all([_sees_vote(viewer, seat) for _, seat, _ in voted]):
            shown["votes"] = {voter: verb if _sees_vote(viewer, seat) else None
                              for voter, seat, verb in voted}
        return shown


def views(state: MatchState, viewers: Iterable[int | None]) -> dict[int | None, dict[str, Any]]:
    """`view(state, v)` for each viewer `v`, built together: what reads the same for all of them
    is computed once. The views share those parts (read them, do not change them)."""
    config = state.config
    viewers = list(dict.fromkeys(viewers))
    _check_viewers(state, viewers)
    hand = state.hand
    outcome = state.outcome
    hands = None if hand is None else _HandViews(state, hand)
    common: dict[str, Any] = {
        "seat": None,
        "variant": _CODE[config.variant],
        "seats": config.seats,
        "mode": _CODE[config.mode],
        "target": config.target,
        "score": list(state.score),
        "phase": _CODE[state.phase],
        "hand_number": state.hand_number,
        "dealer": state.dealer,
        "next_dealer": state.next_dealer,
        "outcome": None
        if outcome is None
        else {"termination": _CODE[outcome.termination], "winner": outcome.winner},
        "hand": None,
        "pending": [
            {"seat": p.seat, "kind": _CODE[p.kind], "team_vote": p.team_vote}
            for p in pending(state)
        ],
        "legal": [],
    }
    out: dict[int | None, dict[str, Any]] = {}
    for viewer in viewers:
        one = common.copy()
        one["seat"] = viewer
        if hands is not None:
            one["hand"] = hands.for_viewer(viewer)
        if viewer is not None:
            actions = legal_actions(state, viewer)
            # most seats may not act now: their empty list without a comprehension's call
            one["legal"] = [action_to_json(action) for action in actions] if actions else []
        out[viewer] = one
    return out


def view(state: MatchState, seat: int | None) -> dict[str, Any]:
    """The JSON-ready table as `seat` sees it (None: an observer)."""
    return views(state, (seat,))[seat]
