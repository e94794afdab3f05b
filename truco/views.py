"""What each seat (or an observer) may see: one function decides, everything else asks it.

`_sees_hand` says whose dealt cards a viewer may see; `_sees_play` says whether a card on the
table is face up for the viewer. `view` renders only through them and `hidden_cards_for` is
their complement, so a test over `hidden_cards_for` covers every view. `_sees_vote` says whose
votes on a pending answer a viewer may read: `view` and `events_json` render votes through it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from truco.actions import action_to_json
from truco.cards import CANONICAL_DECK, Card
from truco.envido import accepted_points, chain_name, declined_points
from truco.events import Event, VoteCast
from truco.match import legal_actions, pending
from truco.state import HandKind, HandState, MatchState, Play, RequestKind
from truco.variants import VariantRules


def _sees_hand(hand: HandState, viewer: int | None, owner: int) -> bool:
    """May `viewer` see the cards `owner` holds?"""
    if viewer is None:
        return _envido_shown(hand, owner)
    if viewer == owner:
        # mão de ferro is played blind: not even one's own cards
        return hand.kind is not HandKind.FERRO
    if (viewer ^ owner) & 1 == 0 and hand.special_team == viewer & 1:
        # the team at onze / dez sees the partner's cards, for that hand only
        return True
    return _envido_shown(hand, owner)


def _envido_shown(hand: HandState, owner: int) -> bool:
    """The accepted envido's winner shows the cards at the end of the hand (Argentino)."""
    envido = hand.envido
    return (
        hand.result is not None
        and envido is not None
        and envido.result is not None
        and envido.result.winner_seat == owner
    )


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
    for owner in range(hand.seats):
        if _envido_shown(hand, owner):
            seen.update(hand.hands[owner])
        elif _sees_hand(hand, seat, owner):
            # the cards still in hand; played ones count as the table shows them (covered: no)
            seen.update(hand.hands[owner][p] for p in hand.remaining(owner))
    for plays in (*(r.plays for r in hand.rounds), hand.table):
        seen.update(play.card for play in plays if _sees_play(hand, seat, play))
    return frozenset(seen)


def hidden_cards_for(state: MatchState, seat: int | None) -> frozenset[Card]:
    """Every card `seat` (None: an observer) may not see now."""
    _check_viewer(state, seat)
    return frozenset(CANONICAL_DECK) - visible_cards(state, seat)


def _check_viewer(state: MatchState, seat: int | None) -> None:
    if seat is not None and (type(seat) is not int or not 0 <= seat < state.config.seats):
        raise ValueError(f"no seat {seat!r} at this table")


_NAMES: tuple[str, ...] = tuple(str(card) for card in CANONICAL_DECK)


def _play_json(hand: HandState, viewer: int | None, play: Play) -> dict[str, Any]:
    face = _NAMES[play.card.index] if _sees_play(hand, viewer, play) else None
    return {"seat": play.seat, "card": face, "covered": play.covered}


def _player_json(hand: HandState, owner: int, sees: bool) -> dict[str, Any]:
    """`owner`'s place at the table for a viewer who `sees` its cards or does not."""
    remaining = hand.remaining(owner)
    cards = hand.hands[owner]
    out: dict[str, Any] = {
        "seat": owner,
        "team": owner & 1,
        "in_hand": hand.in_hand(owner),
        "cards_left": len(remaining),
        # positions stay visible (blind play picks one); faces only where the viewer may see
        "hand": [
            {"position": p, "card": _NAMES[cards[p].index] if sees else None} for p in remaining
        ],
    }
    if sees and _envido_shown(hand, owner):
        out["shown"] = [_NAMES[card.index] for card in cards]
    return out


def _request_json(state: MatchState, hand: HandState) -> dict[str, Any] | None:
    request = hand.request
    if request is None:
        return None
    rules = state.config.rules
    out: dict[str, Any] = {"kind": request.value, "answering_team": hand.answering_team}
    if request is RequestKind.TRUCO:
        assert hand.truco is not None
        out.update(
            seat=hand.truco.seat,
            team=hand.truco.team,
            value=rules.ladder[hand.truco.level],
            name=rules.raise_names[hand.truco.level - 1],
        )
    elif request is RequestKind.ENVIDO:
        assert hand.envido is not None
        chain, score, target = hand.envido.chain, state.score, state.config.target
        out.update(
            seat=hand.envido.seat, team=hand.envido.team, chain=chain_name(chain),
            # what quiero gives the best tanto, and no quiero the calling team (RULES.md)
            accepted_points=accepted_points(chain, score, target),
            declined_points=declined_points(chain, score, target),
        )
    else:
        out.update(name=rules.special_name, value=rules.special_value)
    if hand.truco is not None and request is RequestKind.ENVIDO:
        out["truco_waiting"] = rules.ladder[hand.truco.level]
    return out


def _next_raise(rules: VariantRules, hand: HandState) -> dict[str, Any] | None:
    """The ladder step a `raise` would ask for now (name and value), or None at the top and in
    a hand that has no raises (mão de onze / dez, mão de ferro)."""
    if hand.kind is not HandKind.NORMAL:
        return None
    asked = hand.truco.level if hand.request is RequestKind.TRUCO and hand.truco else hand.level
    step = asked + 1
    if step > rules.top_level:
        return None
    return {"name": rules.raise_names[step - 1], "value": rules.ladder[step]}


def _hand_shared(
    state: MatchState, hand: HandState
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The hand's fields that read the same for every viewer: those before `rounds`, `table` and
    `players` (which come per viewer, see `_HandViews`) and those after them."""
    rules = state.config.rules
    envido: dict[str, Any] | None = None
    if hand.envido is not None:
        result = hand.envido.result
        envido = {
            "chain": chain_name(hand.envido.chain),
            "result": None
            if result is None
            else {
                "accepted": result.accepted,
                "winner_team": result.winner_team,
                "winner_seat": result.winner_seat,
                "points": result.points,
                "tantos": [{"seat": s, "tanto": t} for s, t in result.tantos],
            },
        }
    answering = hand.answering_team
    before = {
        "next_raise": _next_raise(rules, hand),
        "kind": hand.kind.value,
        "special_name": rules.special_name if hand.kind is HandKind.ONZE else None,
        "dealer": hand.dealer,
        "mano": hand.mano,
        "vira": None if hand.vira is None else _NAMES[hand.vira.index],
        "manilhas": [_NAMES[card.index] for card in rules.manilhas(hand.vira)],
        "value": hand.stake,
        "raise_team": hand.raise_team,
        "round": hand.round_number,
        "turn": hand.turn if hand.result is None and answering is None else None,
    }
    after = {
        "request": _request_json(state, hand),
        "votes": {str(s): vote.value for s, vote in enumerate(hand.votes) if vote is not None},
        "envido": envido,
        "result": None
        if hand.result is None
        else {
            "winner_team": hand.result.winner_team,
            "points": hand.result.points,
            "reason": hand.result.reason.value,
        },
    }
    return before, after


class _HandViews:
    """One hand as several viewers see it: what reads alike is built once and shared.

    Only covered cards (face known to their owner) make the played cards differ per viewer, and
    only whether a viewer sees an owner's cards makes a player's entry differ: each owner's entry
    is built at most twice (seen, unseen), whatever the number of viewers.
    """

    def __init__(self, state: MatchState, hand: HandState) -> None:
        self.hand = hand
        self.before, self.after = _hand_shared(state, hand)
        self.covered = any(
            play.covered for plays in (*(r.plays for r in hand.rounds), hand.table)
            for play in plays
        )
        self._plays: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
        self._players: dict[tuple[int, bool], dict[str, Any]] = {}

    def _played(self, viewer: int | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        hand = self.hand
        rounds = [
            {
                "plays": [_play_json(hand, viewer, play) for play in r.plays],
                "winner_team": r.winner_team,
                "winner_seat": r.winner_seat,
                "tied": r.winner_team is None,
            }
            for r in hand.rounds
        ]
        return rounds, [_play_json(hand, viewer, play) for play in hand.table]

    def for_viewer(self, viewer: int | None) -> dict[str, Any]:
        hand = self.hand
        if self.covered:
            rounds, table = self._played(viewer)
        else:
            if self._plays is None:
                self._plays = self._played(None)
            rounds, table = self._plays
        players = []
        for owner in range(hand.seats):
            sees = _sees_hand(hand, viewer, owner)
            entry = self._players.get((owner, sees))
            if entry is None:
                entry = self._players[owner, sees] = _player_json(hand, owner, sees)
            players.append(entry)
        shown = {**self.before, "rounds": rounds, "table": table, "players": players,
                 **self.after}
        votes = self.after["votes"]
        if votes and not all(_sees_vote(viewer, int(voter)) for voter in votes):
            shown["votes"] = {voter: verb if _sees_vote(viewer, int(voter)) else None
                              for voter, verb in votes.items()}
        return shown


def views(state: MatchState, viewers: Iterable[int | None]) -> dict[int | None, dict[str, Any]]:
    """`view(state, v)` for each viewer `v`, built together: what reads the same for all of them
    is computed once. The views share those parts (read them, do not change them)."""
    config = state.config
    viewers = list(dict.fromkeys(viewers))
    for viewer in viewers:
        _check_viewer(state, viewer)
    hand = state.hand
    outcome = state.outcome
    hands = None if hand is None else _HandViews(state, hand)
    common: dict[str, Any] = {
        "seat": None,
        "variant": config.variant.value,
        "seats": config.seats,
        "mode": config.mode.value,
        "target": config.target,
        "score": list(state.score),
        "phase": state.phase.value,
        "hand_number": state.hand_number,
        "dealer": state.dealer,
        "next_dealer": state.next_dealer,
        "outcome": None
        if outcome is None
        else {"termination": outcome.termination.value, "winner": outcome.winner},
        "hand": None,
        "pending": [
            {"seat": p.seat, "kind": p.kind.value, "team_vote": p.team_vote} for p in pending(state)
        ],
        "legal": [],
    }
    out: dict[int | None, dict[str, Any]] = {}
    for viewer in viewers:
        one = dict(common)
        one["seat"] = viewer
        if hands is not None:
            one["hand"] = hands.for_viewer(viewer)
        if viewer is not None:
            one["legal"] = [action_to_json(action) for action in legal_actions(state, viewer)]
        out[viewer] = one
    return out


def view(state: MatchState, seat: int | None) -> dict[str, Any]:
    """The JSON-ready table as `seat` sees it (None: an observer)."""
    return views(state, (seat,))[seat]
