"""The bot policy: one pure function from a seat's view (the engine's `view` JSON) to an action.

The same function drives the server's training bots and the over-the-wire bot client, so it
reads nothing but the view a client receives and returns one of `view["legal"]`. Randomness
comes in as a `random.Random` (a little bluffing keeps it from being fully predictable).

The play is simple but sensible: it weighs its cards by their strength under the hand's vira,
and what they must still do (after a round won, one good card takes the hand; the card leading
the round counts as held), raises with strong hands, answers a raise by that strength, sings
envido with a good tanto (Argentino), plays the mão de onze/dez only with a strong team hand,
and in a round plays the cheapest card that wins it (a round its partner only ties is not won),
or throws its weakest when it cannot win. Partners voting on an answer go with the bolder of
their two wishes, so the partner holding the cards is not overruled by the one who voted first.
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
# playing the mão de onze/dez beats running once its win chance passes a third (RULES.md: it is
# worth three points either way, running gives one): a 3 with two jacks (0.54) plays
PLAY_SPECIAL_STRENGTH = 0.5
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

    def play_strength(self) -> float:
        """How strong my cards are for what the hand still asks of them, in [0, 1].

        A card of my team that leads the round now counts as held. With a round won or tied,
        one more round takes the hand: the best card decides. With a round lost, both rounds
        left are needed: the weaker of the best two decides. With nothing decided yet, the mean
        of the best two, as `hand_strength`."""
        held = [self.strength(c) for c in self.mine]
        open_cards = [(p["seat"], parse_card(p["card"]))
                      for p in self.hand.get("table") or [] if p.get("card")]
        if open_cards:
            best = max(self.strength(card) for _, card in open_cards)
            if {seat % 2 for seat, card in open_cards if self.strength(card) == best} == {
                    self.team}:
                held.append(best)
        if not held:
            return 0.0
        held.sort(reverse=True)
        rounds: list[Json] = self.hand.get("rounds") or []
        if any(r.get("winner_team") == self.team or r.get("tied") for r in rounds):
            return held[0]
        if rounds:  # a round lost, none won
            return held[min(1, len(held) - 1)]
        return sum(held[:2]) / len(held[:2])

    def tanto(self) -> int:
        dealt = self.mine + self.played
        return tanto(dealt) if dealt else 0


def _cards(entries: list[Json]) -> list[Card]:
    return [parse_card(e["card"]) for e in entries if e.get("card")]


def _pick(legal: list[Json], verb: str) -> Json | None:
    return next((a for a in legal if a["do"] == verb), None)


# how bold an answer is: partners go with the bolder of their two votes
_BOLDNESS = {ActionKind.DECLINE.value: 0, ActionKind.ACCEPT.value: 1, ActionKind.RAISE.value: 2,
             **{verb: 3 for verb in _ENVIDO_VERBS}}


def _team_vote(reader: _Reader, legal: list[Json], wish: Json,
               partner_is_person: bool) -> Json:
    """The vote to cast, `wish` being this seat's own answer: the bolder of it and the
    partner's vote. A partner who ran first does not make the one holding the cards run, and
    one who accepted is trusted. Votes only grow bolder, so two policy players agree: the
    bolder one waits for the other to come over (on a tie of boldness the higher seat gives
    in). A person partner knows nothing of that: next to one, the policy adopts their vote.
    """
    votes: dict[str, str] = reader.hand.get("votes") or {}
    partner = (reader.seat + 2) % reader.seats
    theirs = votes.get(str(partner)) if partner != reader.seat else None
    mine = votes.get(str(reader.seat))
    if theirs is None:
        if mine is not None:
            # voted already: changing it before the partner says anything only churns
            raise NothingToDo("this seat voted; the partner has not yet")
        return wish
    follow = _pick(legal, theirs)
    if partner_is_person:
        return follow or wish
    if mine is not None:
        ahead = _BOLDNESS.get(mine, 0) - _BOLDNESS.get(theirs, 0)
        if ahead > 0 or (ahead == 0 and reader.seat < partner):
            raise NothingToDo("the partners disagree; the partner comes over")
        return follow or wish
    if follow is None or _BOLDNESS.get(wish["do"], 0) > _BOLDNESS.get(theirs, 0):
        return wish
    return follow


def _answer(reader: _Reader, request: Json, legal: list[Json], rng: random.Random,
            partner_is_person: bool) -> Json:
    return _team_vote(reader, legal, _wish(reader, request, legal, rng), partner_is_person)


def _wish(reader: _Reader, request: Json, legal: list[Json], rng: random.Random) -> Json:
    """This seat's own answer to `request`, by its cards."""
    kind = request.get("kind")
    strength = reader.play_strength()
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
    strength = reader.play_strength()
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
    best = max(reader.strength(card) for _, card in open_cards)
    if {seat % 2 for seat, card in open_cards if reader.strength(card) == best} == {reader.team}:
        return by_strength[0]  # the partner is winning the round: save the good cards
    # an opponent leads the round, or ties the partner's card (a tied round is not won)
    for action in by_strength:
        if reader.strength(parse_card(action["card"])) > best:
            return action  # the cheapest card that wins the round
    return by_strength[0]
