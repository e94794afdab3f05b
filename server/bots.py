"""The bot policy: one pure function from a seat's view (the engine's `view` JSON) to an action.

The same function drives the server's training bots and the over-the-wire bot client, so it
reads nothing but the view a client receives and returns one of `view["legal"]`. Randomness
comes in as a `random.Random` (a little bluffing keeps it from being fully predictable).

The play is simple but sensible: it weighs its cards by their strength under the hand's vira,
raises with strong hands, answers a raise by the strength it holds, sings envido with a good
tanto (Argentino), plays the mão de onze/dez only with a strong team hand, and in a round plays
the cheapest card that wins it, or throws its weakest when it cannot win.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from truco.actions import ActionKind
from truco.cards import Card, parse_card
from truco.envido import tanto
from truco.variants import Strengths, Variant, rules_for

Json = dict[str, Any]

# thresholds on the hand's strength in [0, 1] (1: the best cards of the deck)
RAISE_STRENGTH = 0.72
ACCEPT_STRENGTH = 0.45
PLAY_SPECIAL_STRENGTH = 0.55
BLUFF_RATE = 0.08
# tanto thresholds (Argentino, max 33)
CALL_ENVIDO_TANTO = 27
RAISE_ENVIDO_TANTO = 30
ACCEPT_ENVIDO_TANTO = 25

_ENVIDO_VERBS = (ActionKind.ENVIDO.value, ActionKind.REAL_ENVIDO.value,
                 ActionKind.FALTA_ENVIDO.value)


class NothingToDo(ValueError):
    """The policy waits: nothing is legal for this seat, or its partner should move first."""


def choose_action(view: Json, rng: random.Random, *, partner_is_person: bool = False) -> Json:
    """One of `view["legal"]` (a scenario-format action), chosen by the hand's strength.

    Raises `NothingToDo` when the seat should not act now: nothing is legal, it voted and its
    partner has not yet, or the partners disagree on a vote and it is the partner's turn to
    give in (see `_team_vote`).
    `partner_is_person`: the partner is a human (a server bot seated next to a player), who
    follows no seat rule: in a vote the bot always adopts the partner's latest vote.
    """
    legal: list[Json] = list(view.get("legal") or [])
    if not legal:
        raise NothingToDo("this seat has nothing to do now")
    if len(legal) == 1:
        return dict(legal[0])
    hand = view.get("hand")
    if not isinstance(hand, dict):
        return dict(legal[0])
    reader = _Reader(view, hand)
    request = hand.get("request")
    if isinstance(request, dict) and request.get("answering_team") == reader.team:
        choice = _answer(reader, request, legal, rng, partner_is_person)
    else:
        choice = _on_turn(reader, legal, rng)
    return dict(choice)


class _Reader:
    """What the policy needs from a view: strengths under this hand's vira, my cards, the table."""

    def __init__(self, view: Json, hand: Json) -> None:
        self.seat: int = int(view["seat"])
        self.seats: int = int(view["seats"])
        self.team = self.seat % 2
        self.variant = Variant(view["variant"])
        vira = hand.get("vira")
        self.strengths: Strengths = rules_for(self.variant).strengths(
            parse_card(vira) if vira else None
        )
        self.top = max(self.strengths)
        self.hand = hand
        players: list[Json] = hand.get("players") or []
        self.mine = _cards(players[self.seat]["hand"]) if self.seat < len(players) else []
        partner = (self.seat + 2) % int(view["seats"])
        self.partner_cards = (
            _cards(players[partner]["hand"]) if partner != self.seat and partner < len(players)
            else []
        )
        self.played = [
            parse_card(play["card"])
            for rnd in hand.get("rounds") or []
            for play in rnd["plays"]
            if play["seat"] == self.seat and play.get("card")
        ] + [
            parse_card(play["card"])
            for play in hand.get("table") or []
            if play["seat"] == self.seat and play.get("card")
        ]

    def strength(self, card: Card) -> float:
        return self.strengths[card.index] / self.top

    def hand_strength(self, cards: Sequence[Card]) -> float:
        """Mean of the best two cards' strengths (one good card alone wins little)."""
        if not cards:
            return 0.0
        best = sorted((self.strength(c) for c in cards), reverse=True)[:2]
        return sum(best) / len(best)

    def tanto(self) -> int:
        dealt = self.mine + self.played
        return tanto(dealt) if dealt else 0


def _cards(entries: list[Json]) -> list[Card]:
    return [parse_card(e["card"]) for e in entries if e.get("card")]


def _pick(legal: list[Json], verb: str) -> Json | None:
    return next((a for a in legal if a["do"] == verb), None)


def _team_vote(reader: _Reader, legal: list[Json], partner_is_person: bool) -> Json | None:
    """Partners follow the first vote cast: the second voter adopts it, and the first waits.

    If both voted at once and disagree, only the higher seat gives in (the lower one waits),
    so two policy players never swap votes forever. A person partner knows nothing of that
    rule: next to one, the policy always gives in.
    """
    votes: dict[str, str] = reader.hand.get("votes") or {}
    partner = (reader.seat + 2) % reader.seats
    theirs = votes.get(str(partner)) if partner != reader.seat else None
    if theirs is None:
        if str(reader.seat) in votes:
            # voted already: changing it before the partner says anything only churns
            raise NothingToDo("this seat voted; the partner has not yet")
        return None
    if str(reader.seat) in votes and reader.seat < partner and not partner_is_person:
        raise NothingToDo("the partners disagree; the partner gives in")
    return _pick(legal, theirs)


def _answer(reader: _Reader, request: Json, legal: list[Json], rng: random.Random,
            partner_is_person: bool) -> Json:
    follow = _team_vote(reader, legal, partner_is_person)
    if follow is not None:
        return follow
    kind = request.get("kind")
    strength = reader.hand_strength(reader.mine)
    accept = _pick(legal, ActionKind.ACCEPT.value)
    decline = _pick(legal, ActionKind.DECLINE.value)
    raise_ = _pick(legal, ActionKind.RAISE.value)
    if kind == "special":
        # the team at onze / dez sees both hands: play them only when together they are strong
        team = reader.hand_strength(reader.mine + reader.partner_cards)
        choice = accept if team >= PLAY_SPECIAL_STRENGTH else decline
        return choice or legal[0]
    if kind == "envido":
        points = reader.tanto()
        calls = [a for a in legal if a["do"] in _ENVIDO_VERBS]
        if points >= RAISE_ENVIDO_TANTO and calls and rng.random() < 0.5:
            return rng.choice(calls)
        if points >= ACCEPT_ENVIDO_TANTO and accept:
            return accept
        return decline or accept or legal[0]
    # a truco: "el envido va primero" with a good tanto, then by strength
    calls = [a for a in legal if a["do"] in _ENVIDO_VERBS]
    if calls and reader.tanto() >= CALL_ENVIDO_TANTO:
        return calls[0]
    if raise_ and strength >= RAISE_STRENGTH and rng.random() < 0.5:
        return raise_
    if accept and (strength >= ACCEPT_STRENGTH or rng.random() < BLUFF_RATE):
        return accept
    return decline or accept or legal[0]


def _on_turn(reader: _Reader, legal: list[Json], rng: random.Random) -> Json:
    calls = [a for a in legal if a["do"] in _ENVIDO_VERBS]
    if calls and reader.tanto() >= CALL_ENVIDO_TANTO and rng.random() < 0.8:
        return calls[0]
    raise_ = _pick(legal, ActionKind.RAISE.value)
    strength = reader.hand_strength(reader.mine)
    if raise_ and ((strength >= RAISE_STRENGTH and rng.random() < 0.4)
                   or rng.random() < BLUFF_RATE / 2):
        return raise_
    plays = [a for a in legal if a["do"] == ActionKind.PLAY.value and not a.get("covered")]
    if not plays:
        fold = _pick(legal, ActionKind.FOLD.value)
        return fold or legal[0]
    blind = [a for a in plays if "card" not in a]
    if blind:
        # mão de ferro: nobody sees their cards; any position is as good as another
        return rng.choice(blind)
    return _card_to_play(reader, plays)


def _card_to_play(reader: _Reader, plays: list[Json]) -> Json:
    by_strength = sorted(plays, key=lambda a: reader.strength(parse_card(a["card"])))
    table: list[Json] = reader.hand.get("table") or []
    open_cards = [(p["seat"], parse_card(p["card"])) for p in table if p.get("card")]
    if not open_cards:
        # leading: open the first round with a middle card, later rounds with the best
        if reader.hand.get("round", 0) == 0 and len(by_strength) == 3:
            return by_strength[1]
        return by_strength[-1]
    best_seat, best = max(open_cards, key=lambda sc: reader.strength(sc[1]))
    if best_seat % 2 == reader.team:
        return by_strength[0]  # the partner is winning the round: save the good cards
    for action in by_strength:
        if reader.strength(parse_card(action["card"])) > reader.strength(best):
            return action  # the cheapest card that wins the round
    return by_strength[0]
