"""Transitions: start a hand, list what a seat may do, apply an action, clock, forfeit.

`legal_actions` is the single source of legality: `apply` accepts exactly the actions it lists
(plus the server's TIMEOUT on a pending decision) and only asks `_refusal` *why* an action is
refused, so the two can never disagree about what is allowed.
"""

from __future__ import annotations

from dataclasses import replace

from truco import envido as envido_rules
from truco.actions import ENVIDO_CALLS, Action, ActionKind
from truco.cards import CANONICAL_DECK, Card
from truco.events import (
    CardPlayed,
    EnvidoAccepted,
    EnvidoCalled,
    EnvidoDeclined,
    Event,
    Folded,
    HandEnded,
    HandStarted,
    MatchEnded,
    RaiseAccepted,
    RaiseDeclined,
    RaiseRequested,
    RoundEnded,
    SpecialHandAnswered,
    VoteCast,
    VoteExpired,
)
from truco.outcome import Outcome, Termination
from truco.reasons import IllegalAction, Reason
from truco.state import (
    Bet,
    Deal,
    EnvidoResult,
    EnvidoState,
    HandEnd,
    HandKind,
    HandResult,
    HandSetup,
    HandState,
    MatchState,
    Pending,
    PendingKind,
    Phase,
    Play,
    RequestKind,
    RoundResult,
    TrucoRequest,
    evolve_bet,
    evolve_hand,
)
from truco.variants import COVERED, MatchConfig, TeamMode, VariantRules

Transition = tuple[MatchState, tuple[Event, ...]]

# Python 3.11 reads `Enum.MEMBER` through a descriptor (about 0.15 µs a time, measured with
# timeit); the transitions run for every action, so they bind the members they test once, here.
_PLAY, _RAISE, _ACCEPT, _DECLINE, _FOLD, _TIMEOUT = (
    ActionKind.PLAY,
    ActionKind.RAISE,
    ActionKind.ACCEPT,
    ActionKind.DECLINE,
    ActionKind.FOLD,
    ActionKind.TIMEOUT,
)
_IN_HAND, _MATCH_OVER, _AWAITING_DEAL = Phase.IN_HAND, Phase.MATCH_OVER, Phase.AWAITING_DEAL
_NORMAL, _ONZE, _FERRO = HandKind.NORMAL, HandKind.ONZE, HandKind.FERRO
_ENVIDO_REQUEST, _SPECIAL_REQUEST = RequestKind.ENVIDO, RequestKind.SPECIAL
_FIRST = TeamMode.FIRST

_MAX_SEATS = 4
# Every action a seat can be offered, built once: legal_actions hands out these shared objects
# instead of allocating new ones on every call (the random-playout benchmark lives on this).
_PLAY_ACTIONS: tuple[tuple[tuple[Action, Action], ...], ...] = tuple(
    tuple(
        (Action(seat, _PLAY, card), Action(seat, _PLAY, card, covered=True))
        for card in CANONICAL_DECK
    )
    for seat in range(_MAX_SEATS)
)
_BLIND_ACTIONS: tuple[tuple[Action, ...], ...] = tuple(
    tuple(Action(seat, _PLAY, position=p) for p in range(3)) for seat in range(_MAX_SEATS)
)
_SIMPLE_ACTIONS: tuple[dict[ActionKind, Action], ...] = tuple(
    {kind: Action(seat, kind) for kind in ActionKind if kind is not _PLAY}
    for seat in range(_MAX_SEATS)
)
_ANSWERS = (_ACCEPT, _DECLINE)
# the shared Pending values, per seat
_PLAY_PENDING = tuple((Pending(seat, PendingKind.PLAY),) for seat in range(_MAX_SEATS))
_ANSWER_PENDING = tuple(Pending(seat, PendingKind.ANSWER) for seat in range(_MAX_SEATS))
_TEAM_VOTE_PENDING = tuple(Pending(seat, PendingKind.ANSWER, True) for seat in range(_MAX_SEATS))


# --------------------------------------------------------------------------- match lifecycle


def new_match(
    config: MatchConfig, first_dealer: int, score: tuple[int, int] = (0, 0)
) -> MatchState:
    """A match waiting for its first deal; `score` lets a match (or a scenario) start mid-way."""
    if not isinstance(config, MatchConfig):
        raise ValueError("config must be a MatchConfig")
    if _bad_int(first_dealer) or not 0 <= first_dealer < config.seats:
        raise ValueError(f"first dealer must be a seat 0..{config.seats - 1}, not {first_dealer!r}")
    if (
        not isinstance(score, _SEQUENCES)
        or len(score) != 2
        or any(_bad_int(points) or points < 0 for points in score)
    ):
        raise ValueError(f"score must be two non-negative integers, not {score!r}")
    if max(score) >= config.target:
        raise ValueError(f"score {list(score)} already reaches the target {config.target}")
    return MatchState(
        config=config,
        score=(score[0], score[1]),
        hand_number=0,
        dealer=first_dealer,
        phase=_AWAITING_DEAL,
        hand=None,
        outcome=None,
    )


# what a deal's hands (and a score) may come as; a tuple of types, cheaper to test than `A | B`
_SEQUENCES = (tuple, list)


def _bad_int(value: object) -> bool:
    return not isinstance(value, int) or isinstance(value, bool)


def check_deal(config: MatchConfig, deal: Deal) -> None:
    """Raise ValueError unless `deal` is a well-formed deal for `config`."""
    if _bad_int(deal.dealer) or not 0 <= deal.dealer < config.seats:
        raise ValueError(f"dealer must be a seat 0..{config.seats - 1}, not {deal.dealer!r}")
    if not isinstance(deal.hands, _SEQUENCES) or len(deal.hands) != config.seats:
        raise ValueError(f"a {config.seats}-seat deal needs {config.seats} hands")
    size = config.hand_size
    seen = 0  # bitmask of card indices: a deal is checked once per hand, so keep it cheap
    for seat, cards in enumerate(deal.hands):
        if not isinstance(cards, _SEQUENCES) or len(cards) != size:
            raise ValueError(f"seat {seat} must be dealt {size} cards")
        for card in cards:
            if type(card) is not Card:
                raise ValueError(f"seat {seat} was dealt {card!r}, which is not a card")
            bit = 1 << card.index
            if seen & bit:
                raise ValueError(f"card {card} is dealt twice")
            seen |= bit
    if config.uses_vira:
        if type(deal.vira) is not Card:
            raise ValueError(f"{config.variant.value} needs a vira")
        if seen & (1 << deal.vira.index):
            raise ValueError(f"the vira {deal.vira} is also in a hand")
    elif deal.vira is not None:
        raise ValueError(f"{config.variant.value} has no vira")


def start_hand(state: MatchState, deal: Deal) -> Transition:
    """Deal the next hand. The score decides whether it is a mão de onze / dez / ferro."""
    if state.phase is _MATCH_OVER:
        raise IllegalAction(Reason.MATCH_OVER, "the match is over")
    if state.phase is _IN_HAND:
        raise IllegalAction(Reason.HAND_IN_PROGRESS, "a hand is in progress")
    config = state.config
    rules = config.rules
    check_deal(config, deal)
    if deal.dealer != state.next_dealer:
        raise ValueError(f"seat {state.next_dealer} deals this hand, not seat {deal.dealer}")
    seats = config.seats
    kind = _NORMAL
    special_team: int | None = None
    if rules.special_score is not None:
        at_special = [points == rules.special_score for points in state.score]
        if all(at_special):
            kind = _FERRO
        elif any(at_special):
            kind = _ONZE
            special_team = at_special.index(True)
    mano = (deal.dealer + 1) % seats
    setup = HandSetup(
        kind=kind,
        dealer=deal.dealer,
        mano=mano,
        hands=tuple([tuple(cards) for cards in deal.hands]),
        vira=deal.vira,
        strengths=rules.strengths(deal.vira),
        special_team=special_team,
        seats=seats,
    )
    bet = Bet(
        level=0,
        stake=rules.base_value,
        raise_team=None,
        truco=None,
        truco_called=False,
        truco_answered=False,
        special_pending=special_team is not None,
    )
    hand = HandState(
        setup=setup,
        used=(0,) * seats,
        folded=0,
        rounds=(),
        table=(),
        turn=mano,
        bet=bet,
        envido=None,
        votes=(None,) * seats,
        result=None,
    )
    new_state = MatchState(
        config=config,
        score=state.score,
        hand_number=state.hand_number + 1,
        dealer=deal.dealer,
        phase=_IN_HAND,
        hand=hand,
        outcome=None,
    )
    event = HandStarted(
        hand_number=state.hand_number,
        dealer=deal.dealer,
        mano=mano,
        kind=kind.value,
        value=hand.stake,
        vira=deal.vira,
    )
    return new_state, (event,)


def forfeit(state: MatchState, team: int, termination: Termination) -> MatchState:
    """End the match by abandonment (`team` abandoned; the other wins) or cancellation."""
    if state.phase is _MATCH_OVER:
        raise IllegalAction(Reason.MATCH_OVER, "the match is already over")
    if _bad_int(team) or team not in (0, 1):
        raise ValueError(f"team must be 0 or 1, not {team!r}")
    if termination is Termination.ABANDONMENT:
        outcome = Outcome(termination, 1 - team)
    elif termination is Termination.CANCELLED:
        outcome = Outcome(termination, None)
    else:
        raise ValueError(
            f"forfeit ends a match by abandonment or cancellation, not {termination!r}"
        )
    hand = state.hand
    if hand is not None and hand.result is None:
        hand = evolve_hand(hand, result=HandResult(None, 0, HandEnd.ABANDONED))
    return replace(state, phase=_MATCH_OVER, hand=hand, outcome=outcome)


# --------------------------------------------------------------------------- legality


def legal_actions(state: MatchState, seat: int) -> tuple[Action, ...]:
    """Everything `seat` may do now (never TIMEOUT); empty when it may not act."""
    hand = state.hand
    if hand is None or state.phase is not _IN_HAND or type(seat) is not int:
        return ()
    cached = hand.legal_cache.get(seat)
    if cached is None:
        if not 0 <= seat < hand.setup.seats:
            return ()
        cached = _compute_legal(state.config.rules, hand, seat)
        hand.legal_cache[seat] = cached
    return cached


def _compute_legal(rules: VariantRules, hand: HandState, seat: int) -> tuple[Action, ...]:
    if (hand.folded >> seat) & 1:
        return ()
    simple = _SIMPLE_ACTIONS[seat]
    team = hand.answering_team
    if team is not None:
        if seat & 1 != team:
            return ()
        vote = hand.votes[seat]
        request = hand.request
        assert request is not None
        return tuple([simple[kind] for kind in _answers(rules, hand, request) if kind is not vote])
    if seat != hand.turn:
        return ()
    # one's turn to play: the cards, then the calls. Written out inline: this runs for every
    # state of every playout, and helper calls are a large part of its cost.
    used = hand.used[seat]
    setup = hand.setup
    actions: list[Action]
    if setup.kind is _FERRO:
        blind = _BLIND_ACTIONS[seat]
        actions = [blind[p] for p in range(len(setup.hands[seat])) if not (used >> p) & 1]
    else:
        plays = _PLAY_ACTIONS[seat]
        # covered cards from round 2 on (Brazilian variants)
        cover = rules.covered_cards and len(hand.rounds) > 0
        actions = []
        for position, card in enumerate(setup.hands[seat]):
            if not (used >> position) & 1:
                pair = plays[card.index]
                actions.append(pair[0])
                if cover:
                    actions.append(pair[1])
    bet = hand.bet
    # no raises in a mão de onze/dez or de ferro; the team that asked last waits for the others
    if (
        setup.kind is _NORMAL
        and bet.level < rules.top_level
        and (bet.raise_team is None or bet.raise_team == seat & 1)
    ):
        actions.append(simple[_RAISE])
    # envido: round 1, before one's card (it is one's turn), once a hand, before any truco
    if rules.envido and not hand.rounds and hand.envido is None and not bet.truco_called:
        actions.extend([simple[kind] for kind in envido_rules.next_calls(())])
    if rules.fold:
        actions.append(simple[_FOLD])
    return tuple(actions)


def _answers(rules: VariantRules, hand: HandState, request: RequestKind) -> tuple[ActionKind, ...]:
    if request is _SPECIAL_REQUEST:
        return _ANSWERS
    if request is _ENVIDO_REQUEST:
        assert hand.envido is not None
        return _ANSWERS + envido_rules.next_calls(hand.envido.chain)
    assert hand.truco is not None
    answers: tuple[ActionKind, ...] = _ANSWERS
    if hand.truco.level < rules.top_level:
        answers += (_RAISE,)
    if _envido_goes_first(rules, hand):
        answers += envido_rules.next_calls(())
    return answers


def _envido_goes_first(rules: VariantRules, hand: HandState) -> bool:
    """A round-1 truco may be answered with envido while an answering player has not played."""
    if not rules.envido or hand.rounds or hand.envido is not None or hand.truco_answered:
        return False
    team = hand.answering_team
    assert team is not None
    return any(not hand.played_this_round(s) for s in hand.voters(team))


def _refusal(state: MatchState, hand: HandState, action: Action) -> IllegalAction:
    """Why `action` is not among the seat's legal actions (only called when it is not)."""
    rules = state.config.rules
    seat, kind = action.seat, action.kind
    if kind is not _PLAY and (
        action.card is not None or action.covered or action.position is not None
    ):
        return IllegalAction(Reason.BAD_ACTION, f"{kind.value} takes no card or position")
    if (kind in ENVIDO_CALLS and not rules.envido) or (kind is _FOLD and not rules.fold):
        return IllegalAction(Reason.WRONG_VARIANT, f"{rules.variant.value} has no {kind.value}")
    if kind is _PLAY and action.covered and not rules.covered_cards:
        return IllegalAction(Reason.WRONG_VARIANT, f"{rules.variant.value} has no covered cards")
    if not hand.in_hand(seat):
        return IllegalAction(Reason.FOLDED, f"seat {seat} went to the mazo")
    request = hand.request
    if request is not None:
        team = hand.answering_team
        if seat & 1 != team or kind in (_PLAY, _FOLD):
            return IllegalAction(
                Reason.ANSWER_PENDING, f"waiting for team {team} to answer the {request.value}"
            )
        if hand.votes[seat] is kind:
            return IllegalAction(Reason.ALREADY_VOTED, f"seat {seat} already voted {kind.value}")
        if kind is _RAISE:
            return IllegalAction(Reason.RAISE_NOT_ALLOWED, f"no raise in answer to this {request}")
        if kind in ENVIDO_CALLS:
            return IllegalAction(Reason.ENVIDO_NOT_ALLOWED, f"{kind.value} is not open now")
        return IllegalAction(Reason.BAD_ACTION, f"{kind.value} is not an answer")
    if kind in _ANSWERS:
        return IllegalAction(Reason.NOTHING_TO_ANSWER, "no request is waiting for an answer")
    if seat != hand.turn:
        if kind is _FOLD:
            return IllegalAction(Reason.FOLD_NOT_ALLOWED, "ir al mazo only on one's turn to play")
        return IllegalAction(Reason.NOT_YOUR_TURN, f"it is seat {hand.turn}'s turn")
    if kind is _PLAY:
        return _play_refusal(rules, hand, action)
    if kind is _RAISE:
        if hand.kind is not _NORMAL:
            why = "no raises in this hand"
        elif hand.level >= rules.top_level:
            why = "the stake is already at the top of the ladder"
        else:
            why = f"team {hand.raise_team} raises next"
        return IllegalAction(Reason.RAISE_NOT_ALLOWED, why)
    if kind in ENVIDO_CALLS:
        return IllegalAction(
            Reason.ENVIDO_NOT_ALLOWED, "envido is only called once, in round 1, before any truco"
        )
    return IllegalAction(Reason.BAD_ACTION, f"{kind.value} is not possible now")


def _play_refusal(rules: VariantRules, hand: HandState, action: Action) -> IllegalAction:
    seat = action.seat
    if hand.kind is _FERRO:
        if action.position is None:
            return IllegalAction(
                Reason.POSITION_REQUIRED, "in mão de ferro a card is played by position"
            )
        if action.covered:
            return IllegalAction(Reason.COVER_NOT_ALLOWED, "no covered cards in mão de ferro")
        if action.card is not None:
            return IllegalAction(Reason.BAD_ACTION, "a blind play names a position, not a card")
        return IllegalAction(
            Reason.CARD_NOT_IN_HAND, f"seat {seat} holds no card at position {action.position}"
        )
    if action.card is None or action.position is not None:
        return IllegalAction(
            Reason.BAD_ACTION, "play a card by naming it (positions: mão de ferro)"
        )
    card = action.card
    if card not in hand.hands[seat] or (hand.used[seat] >> hand.hands[seat].index(card)) & 1:
        return IllegalAction(Reason.CARD_NOT_IN_HAND, f"seat {seat} does not hold {card}")
    if action.covered:
        return IllegalAction(Reason.COVER_NOT_ALLOWED, "cards are covered from round 2 on")
    return IllegalAction(Reason.BAD_ACTION, "this play is not possible now")


# --------------------------------------------------------------------------- applying


def apply(state: MatchState, action: Action) -> Transition:
    """The new state and its events, or IllegalAction (a ValueError) with a stable reason."""
    hand = state.hand
    if state.phase is not _IN_HAND or hand is None:
        if state.phase is _MATCH_OVER:
            raise IllegalAction(Reason.MATCH_OVER, "the match is over")
        raise IllegalAction(Reason.HAND_NOT_IN_PROGRESS, "no hand is in progress")
    if type(action) is not Action or not isinstance(action.kind, ActionKind):
        raise IllegalAction(Reason.BAD_ACTION, f"not an action: {action!r}")
    seat = action.seat
    if type(seat) is not int or not 0 <= seat < hand.setup.seats:
        raise IllegalAction(Reason.UNKNOWN_SEAT, f"no seat {seat!r} at this table")
    kind = action.kind
    if kind is _TIMEOUT:
        if action.card is not None or action.covered or action.position is not None:
            raise IllegalAction(Reason.BAD_ACTION, "timeout takes no card or position")
        return _timeout(state, hand, seat)
    legal = hand.legal_cache.get(seat)
    if legal is None:
        legal = legal_actions(state, seat)
    # Bots and the UI hand back the very objects legal_actions gave them: find those by identity
    # first, since `in` would call the dataclass __eq__ on every entry before the match.
    for offered in legal:
        if offered is action:
            break
    else:
        if action not in legal:
            raise _refusal(state, hand, action)
    team = hand.answering_team
    if team is not None:
        return _vote(state, hand, team, seat, kind, automatic=False)
    if kind is _PLAY:
        if action.position is not None:
            position = action.position
        else:
            assert action.card is not None
            position = hand.setup.hands[seat].index(action.card)
        return _play(state, hand, seat, position, action.covered, automatic=False)
    if kind is _RAISE:
        return _ask_raise(state, hand, seat)
    if kind in ENVIDO_CALLS:
        return _call_envido(state, hand, seat, kind)
    return _fold(state, hand, seat)


def _with_hand(
    state: MatchState, hand: HandState, score: tuple[int, int] | None = None
) -> MatchState:
    return MatchState(
        state.config,
        state.score if score is None else score,
        state.hand_number,
        state.dealer,
        state.phase,
        hand,
        state.outcome,
    )


def _ask_raise(state: MatchState, hand: HandState, seat: int) -> Transition:
    rules = state.config.rules
    level = hand.level + 1
    team = seat & 1
    request = TrucoRequest(seat=seat, team=team, level=level)
    new_hand = evolve_hand(hand, bet=evolve_bet(hand.bet, truco=request, truco_called=True))
    event = RaiseRequested(seat, team, rules.ladder[level], rules.raise_names[level - 1])
    return _with_hand(state, new_hand), (event,)


def _call_envido(state: MatchState, hand: HandState, seat: int, call: ActionKind) -> Transition:
    chain = (call,)
    new_hand = evolve_hand(hand, envido=EnvidoState(chain=chain, seat=seat, team=seat & 1))
    event = EnvidoCalled(seat, seat & 1, call, envido_rules.chain_name(chain))
    return _with_hand(state, new_hand), (event,)


def _vote(
    state: MatchState, hand: HandState, team: int, seat: int, vote: ActionKind, *, automatic: bool
) -> Transition:
    """Record `seat`'s answer; the team answers once its voters agree (or at once: `first`, 1v1)."""
    votes = list(hand.votes)
    votes[seat] = vote
    events: list[Event] = [VoteCast(seat, vote, automatic)]
    if state.config.mode is _FIRST or all(votes[s] is vote for s in hand.voters(team)):
        return _team_answers(state, hand, team, seat, vote, events)
    return _with_hand(state, evolve_hand(hand, votes=tuple(votes))), (events[0],)


def _team_answers(
    state: MatchState,
    hand: HandState,
    team: int,
    seat: int,
    answer: ActionKind,
    events: list[Event],
) -> Transition:
    rules = state.config.rules
    request = hand.request
    cleared = (None,) * hand.setup.seats  # a team answer closes the vote
    if request is _SPECIAL_REQUEST:
        play = answer is _ACCEPT
        events.append(SpecialHandAnswered(team, play))
        if not play:
            return _finish_hand(
                state, hand, 1 - team, rules.special_run_points, HandEnd.RAN, events
            )
        bet = evolve_bet(hand.bet, special_pending=False, stake=rules.special_value)
        hand = evolve_hand(hand, votes=cleared, bet=bet)
        return _with_hand(state, hand), tuple(events)
    if request is _ENVIDO_REQUEST:
        return _answer_envido(state, hand, team, seat, answer, events)
    truco = hand.truco
    assert truco is not None
    if answer is _DECLINE:
        events.append(RaiseDeclined(team, hand.stake))
        return _finish_hand(state, hand, truco.team, hand.stake, HandEnd.DECLINED, events)
    if answer in ENVIDO_CALLS:
        # el envido va primero: the truco waits, the envido is answered by the truco's asker
        chain = (answer,)
        envido = EnvidoState(chain=chain, seat=seat, team=team, in_answer=True)
        hand = evolve_hand(hand, votes=cleared, envido=envido)
        events.append(EnvidoCalled(seat, team, answer, envido_rules.chain_name(chain)))
        return _with_hand(state, hand), tuple(events)
    stake = rules.ladder[truco.level]
    events.append(RaiseAccepted(team, stake))
    request_next: TrucoRequest | None = None
    if answer is _RAISE:
        # raising back accepts the step asked and asks the next one
        level = truco.level + 1
        request_next = TrucoRequest(seat=seat, team=team, level=level, in_answer=True)
        events.append(RaiseRequested(seat, team, rules.ladder[level], rules.raise_names[level - 1]))
    bet = evolve_bet(
        hand.bet,
        level=truco.level,
        stake=stake,
        raise_team=team,
        truco=request_next,
        truco_answered=True,
    )
    hand = evolve_hand(hand, votes=cleared, bet=bet)
    return _with_hand(state, hand), tuple(events)


def _answer_envido(
    state: MatchState,
    hand: HandState,
    team: int,
    seat: int,
    answer: ActionKind,
    events: list[Event],
) -> Transition:
    current = hand.envido
    assert current is not None
    chain = current.chain
    name = envido_rules.chain_name(chain)
    target = state.config.target
    cleared = (None,) * hand.setup.seats
    if answer in ENVIDO_CALLS:
        chain += (answer,)
        envido = EnvidoState(chain=chain, seat=seat, team=team, in_answer=True)
        hand = evolve_hand(hand, votes=cleared, envido=envido)
        events.append(EnvidoCalled(seat, team, answer, envido_rules.chain_name(chain)))
        return _with_hand(state, hand), tuple(events)
    if answer is _DECLINE:
        points = envido_rules.declined_points(chain, state.score, target)
        result = EnvidoResult(False, current.team, points, None, ())
        events.append(EnvidoDeclined(name, current.team, points))
    else:
        points = envido_rules.accepted_points(chain, state.score, target)
        everyone = tuple(
            (s, envido_rules.tanto(hand.hands[s])) for s in _from_mano(hand) if hand.in_hand(s)
        )
        # highest tanto wins; on equal tantos the seat nearest mano (first in this order) wins
        winner_seat, best = everyone[0]
        for s, value in everyone[1:]:
            if value > best:
                winner_seat, best = s, value
        tantos = _sung(everyone, winner_seat)
        result = EnvidoResult(True, winner_seat & 1, points, winner_seat, tantos)
        events.append(EnvidoAccepted(name, tantos, winner_seat, winner_seat & 1, points))
    settled = EnvidoState(chain=chain, seat=current.seat, team=current.team, result=result,
                          in_answer=current.in_answer)
    hand = evolve_hand(hand, votes=cleared, envido=settled)
    return _score_now(state, hand, result.winner_team, points, events)


def _sung(everyone: tuple[tuple[int, int], ...], winner: int) -> tuple[tuple[int, int], ...]:
    """The tantos the table sings for the players ("son buenas"): mano's first; then, round the
    table from mano for as long as one can, a player sings only when the other team holds the
    best so far and their tanto beats it (an equal one beats it when its seat is nearer mano).
    The others say "son buenas": their tantos stay hidden. The winner sings last (a partner of
    the best so far who holds more sings it too: the winner's cards are shown anyway)."""
    order = {seat: index for index, (seat, _) in enumerate(everyone)}
    sung = [everyone[0]]
    best_seat, best = everyone[0]
    changed = True
    while changed:
        changed = False
        for seat, value in everyone:
            if (seat & 1) != (best_seat & 1) and (
                    value > best or (value == best and order[seat] < order[best_seat])):
                sung.append((seat, value))
                best_seat, best = seat, value
                changed = True
    if best_seat != winner:
        sung.append(next(entry for entry in everyone if entry[0] == winner))
    return tuple(sung)


def _from_mano(hand: HandState) -> tuple[int, ...]:
    return tuple((hand.mano + i) % hand.setup.seats for i in range(hand.setup.seats))


def _score_now(
    state: MatchState, hand: HandState, team: int, points: int, events: list[Event]
) -> Transition:
    """Points scored mid-hand (envido): counted at once; reaching the target ends the match."""
    score = _add(state.score, team, points)
    if score[team] >= state.config.target:
        hand = evolve_hand(hand, result=HandResult(None, 0, HandEnd.MATCH_ENDED))
        events.append(HandEnded(None, 0, HandEnd.MATCH_ENDED.value, score))
        return _end_match(state, hand, score, team, events)
    return _with_hand(state, hand, score), tuple(events)


def _add(score: tuple[int, int], team: int, points: int) -> tuple[int, int]:
    return (score[0] + points, score[1]) if team == 0 else (score[0], score[1] + points)


def _end_match(
    state: MatchState, hand: HandState, score: tuple[int, int], winner: int, events: list[Event]
) -> Transition:
    outcome = Outcome(Termination.TARGET, winner)
    events.append(MatchEnded(outcome, score))
    new_state = MatchState(
        config=state.config,
        score=score,
        hand_number=state.hand_number,
        dealer=state.dealer,
        phase=_MATCH_OVER,
        hand=hand,
        outcome=outcome,
    )
    return new_state, tuple(events)


def _finish_hand(
    state: MatchState,
    hand: HandState,
    winner: int | None,
    points: int,
    reason: HandEnd,
    events: list[Event],
) -> Transition:
    hand = evolve_hand(
        hand,
        result=HandResult(winner, points, reason),
        bet=evolve_bet(hand.bet, truco=None, special_pending=False),
        votes=(None,) * hand.setup.seats,
    )
    score = state.score if winner is None else _add(state.score, winner, points)
    events.append(HandEnded(winner, points, reason.value, score))
    if winner is not None and score[winner] >= state.config.target:
        return _end_match(state, hand, score, winner, events)
    new_state = MatchState(
        config=state.config,
        score=score,
        hand_number=state.hand_number,
        dealer=state.dealer,
        phase=_AWAITING_DEAL,
        hand=hand,
        outcome=None,
    )
    return new_state, tuple(events)


def _play(
    state: MatchState, hand: HandState, seat: int, position: int, covered: bool, *, automatic: bool
) -> Transition:
    seats = hand.setup.seats
    card = hand.setup.hands[seat][position]
    used = list(hand.used)
    used[seat] |= 1 << position
    table = (*hand.table, Play(seat, card, covered, position))
    events: list[Event] = [CardPlayed(seat, card, covered, position, len(hand.rounds), automatic)]
    folded = hand.folded
    if len(table) == seats - folded.bit_count():
        return _end_round(state, hand, tuple(used), folded, table, events)
    # without folds the round simply goes round the table
    turn = (seat + 1) % seats if not folded else _next_to_play(seats, folded, table, seat)
    hand = evolve_hand(hand, used=tuple(used), table=table, turn=turn)
    new_state = MatchState(
        state.config,
        state.score,
        state.hand_number,
        state.dealer,
        state.phase,
        hand,
        state.outcome,
    )
    return new_state, (events[0],)


def _next_to_play(seats: int, folded: int, table: tuple[Play, ...], after: int) -> int:
    """The next seat in turn order still in the hand that has not played this round."""
    for step in range(1, seats):
        seat = (after + step) % seats
        if not (folded >> seat) & 1 and all(play.seat != seat for play in table):
            return seat
    raise AssertionError("no seat left to play in an unfinished round")


def _end_round(
    state: MatchState,
    hand: HandState,
    used: tuple[int, ...],
    folded: int,
    table: tuple[Play, ...],
    events: list[Event],
) -> Transition:
    """Every seat still in the hand has played: score the round, maybe the hand."""
    strengths = hand.setup.strengths
    best = COVERED - 1
    first: Play = table[0]
    teams = 0  # bitmask of teams holding the best strength
    for play in table:
        strength = COVERED if play.covered else strengths[play.card.index]
        if strength > best:
            best, first, teams = strength, play, 1 << (play.seat & 1)
        elif strength == best:
            teams |= 1 << (play.seat & 1)
    if best == COVERED or teams == 3:
        # all covered, or the best strength on both teams: the round ties (cangou / parda)
        result = RoundResult(table, None, None)
    else:
        # the first of the winning team to play its best card takes the round
        result = RoundResult(table, first.seat & 1, first.seat)
    rounds = (*hand.rounds, result)
    events.append(RoundEnded(len(hand.rounds), result.winner_team, result.winner_seat))
    decided, winner = _hand_decided(rounds)
    # the round's winner leads the next; after a tie, whoever led the tied round
    leader = result.winner_seat if result.winner_seat is not None else result.leader
    hand = evolve_hand(hand, used=used, folded=folded, rounds=rounds, table=(), turn=leader)
    if decided:
        rules = state.config.rules
        if winner is not None:
            return _finish_hand(state, hand, winner, hand.stake, HandEnd.ROUNDS, events)
        if rules.all_ties_to_mano:
            return _finish_hand(state, hand, hand.mano & 1, hand.stake, HandEnd.ROUNDS, events)
        return _finish_hand(state, hand, None, 0, HandEnd.TIED, events)
    return _with_hand(state, hand), tuple(events)


def _hand_decided(rounds: tuple[RoundResult, ...]) -> tuple[bool, int | None]:
    """RULES.md's table: (decided, winning team or None for nobody)."""
    if len(rounds) < 2:
        return False, None
    first, second = rounds[0].winner_team, rounds[1].winner_team
    if len(rounds) == 2:
        if first is None and second is None:
            return False, None
        if first is None or second is None:
            return True, first if first is not None else second
        return (True, first) if first == second else (False, None)
    third = rounds[2].winner_team
    if third is not None:
        return True, third
    # X Y tie: round 1 decides; tie tie tie: nobody (the caller applies the variant's rule)
    return True, first


def _fold(state: MatchState, hand: HandState, seat: int) -> Transition:
    rules = state.config.rules
    team = seat & 1
    folded = hand.folded | (1 << seat)
    events: list[Event] = [Folded(seat)]
    if all((folded >> s) & 1 for s in range(team, hand.setup.seats, 2)):
        # the whole team went: the others score the hand, plus 1 if envido was still open
        envido_open = (
            rules.envido and not hand.rounds and hand.envido is None and not hand.truco_called
        )
        points = hand.stake + (1 if envido_open else 0)
        hand = evolve_hand(hand, folded=folded)
        return _finish_hand(state, hand, 1 - team, points, HandEnd.FOLD, events)
    table = hand.table
    if table and len(table) == hand.setup.seats - folded.bit_count():
        return _end_round(state, hand, hand.used, folded, table, events)
    turn = _next_to_play(hand.setup.seats, folded, table, seat)
    return _with_hand(state, evolve_hand(hand, folded=folded, turn=turn)), tuple(events)


# --------------------------------------------------------------------------- clocks


def pending(state: MatchState) -> tuple[Pending, ...]:
    """The decisions the server must clock now; TIMEOUT is legal exactly for these seats."""
    hand = state.hand
    if state.phase is not _IN_HAND or hand is None:
        return ()
    memo = hand.pending_cache
    if memo:
        return memo[0]
    team = hand.answering_team
    clocked = _PLAY_PENDING[hand.turn] if team is None else _answer_pending(hand, team)
    memo.append(clocked)
    return clocked


def _answer_pending(hand: HandState, team: int) -> tuple[Pending, ...]:
    voters = hand.voters(team)
    votes = hand.votes
    waiting = [_ANSWER_PENDING[s] for s in voters if votes[s] is None]
    if waiting:
        return tuple(waiting)
    # everyone voted and they disagree: the clock to agree runs for all of them
    return tuple([_TEAM_VOTE_PENDING[s] for s in voters])


def _timeout(state: MatchState, hand: HandState, seat: int) -> Transition:
    if not any(p.seat == seat for p in pending(state)):
        raise IllegalAction(Reason.TIMEOUT_NOT_PENDING, f"no decision of seat {seat} is clocked")
    team = hand.answering_team
    if team is not None:
        if hand.votes[seat] is None:
            return _vote(state, hand, team, seat, _DECLINE, automatic=True)
        # the partners disagreed until the end of their 10 s: the team declines
        events: list[Event] = [VoteExpired(team)]
        return _team_answers(state, hand, team, seat, _DECLINE, events)
    positions = hand.remaining(seat)
    if hand.kind is _FERRO:
        position = positions[0]
    else:
        # the weakest card; between equals the one dealt first
        strengths = hand.strengths
        position = min(positions, key=lambda p: (strengths[hand.hands[seat][p].index], p))
    return _play(state, hand, seat, position, False, automatic=True)
