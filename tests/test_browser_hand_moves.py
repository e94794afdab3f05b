"""The hand page lists how a past hand was played (a player who opened one saw its deck, deal
and score, never its moves).

The record keeps the players' inputs only (docs/FAIRNESS.md 7): what each one was at the table
(a vote or the team's answer, the card a clock played, when a round ended) is worked out by
`moves.js` following the hand. Its reading is held to the engine's own events over many sample
records of every variant, seat count and answer mode; and a real record's list on the page is
checked word for word: a truco and its answer, a covered card, an Argentino envido, a clock's
automatic play, the player's own moves marked.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect

from tests.test_browser_fairness_review import house_key, open_hand, serve_chain
from tests.test_browser_score_words import played_here
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    LiveServer,
    browser_fixture,
    live_server_fixture,
    new_page,
    signup,
)
from truco.actions import Action, ActionKind
from truco.events import (
    CardPlayed,
    EnvidoCalled,
    Folded,
    RaiseRequested,
    RoundEnded,
    VoteCast,
    VoteExpired,
)
from truco.match import apply, legal_actions, new_match, pending, start_hand
from truco.records import parse_record, replay
from truco.state import MatchState
from truco.variants import MatchConfig, TeamMode, Variant
from verifier.samples import random_policy, sample_signing_key, sample_table

pytestmark = pytest.mark.timeout(180)

TABLE = "0123456789abcdef"
# the answers that close a team's vote (a team answer follows the deciding vote)
ANSWER_EVENTS = frozenset({
    "raise_accepted", "raise_declined", "special_hand_answered", "envido_accepted",
    "envido_declined",
})


def engine_moves(record: dict[str, Any]) -> list[list[Any]]:
    """What the page should list, from the engine's events: [round, action index or None, seat
    or None, what, card or None], `what` the verb done ("play", "accept", a vote's verb, "answer"
    for a team's answer after its deciding vote, "round" for a round's result, its last item the
    seat that took the round)."""
    parsed = parse_record(record)
    replay(parsed)  # a genuine record
    config = parsed.config
    state = new_match(config, first_dealer=parsed.dealer, score=parsed.score_before)
    state, _ = start_hand(state, parsed.deal)
    voting = config.seats == 4 and config.mode is TeamMode.VOTE
    folded: set[int] = set()
    rounds = 1
    out: list[list[Any]] = []
    for index, action in enumerate(parsed.actions):
        state, events = apply(state, action)
        voted = answered = False
        for event in events:
            if isinstance(event, CardPlayed):
                out.append([rounds, index, event.seat, "play", str(event.card)])
            elif isinstance(event, VoteCast):
                voted = True
                out.append([rounds, index, event.seat, event.vote.value, None])
            elif isinstance(event, VoteExpired):
                voted = True
                out.append([rounds, index, action.seat, "timeout", None])
            elif isinstance(event, (RaiseRequested, EnvidoCalled)) and not voted:
                what = "raise" if isinstance(event, RaiseRequested) else event.call.value
                out.append([rounds, index, event.seat, what, None])
            elif voting and voted and not answered and (
                isinstance(event, (RaiseRequested, EnvidoCalled)) or event.type in ANSWER_EVENTS
            ):
                # the team's answer, after its deciding vote (a raise back: one answer)
                answered = True
                team = action.seat % 2
                partners = [s for s in range(team, 4, 2) if s not in folded]
                if len(partners) > 1 and not isinstance(events[0], VoteExpired):
                    out.append([rounds, None, None, "answer", None])
            elif isinstance(event, Folded):
                folded.add(event.seat)
                out.append([rounds, index, event.seat, "fold", None])
            elif isinstance(event, RoundEnded):
                out.append([rounds, None, None, "round", event.winner_seat])
                rounds += 1
    return out


async def page_moves(page: Page, records: list[dict[str, Any]]) -> list[Any]:
    """moves.js's reading of each record, in the engine_moves form."""
    return await page.evaluate("""async (records) => {
      const { handMoves } = await import("/static/js/moves.js");
      const names = { seat: (s) => `Lugar ${s + 1}`, seatMid: (s) => `lugar ${s + 1}`,
        team: (t) => `Dupla ${t}`, teamMid: (t) => `dupla ${t}` };
      return records.map((r) => handMoves(r, names).flatMap(({ round, moves }) => moves.map((m) =>
        [round, m.index ?? null, m.seat, m.do, m.card ?? m.winner ?? null])));
    }""", records)


@pytest.mark.parametrize("variant", list(Variant))
async def test_the_moves_of_every_sample_hand_are_the_engines(
    live_server: LiveServer, browser: Browser, variant: Variant
) -> None:
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verify"))
    records: list[dict[str, Any]] = []
    for seats, mode in ((2, TeamMode.VOTE), (4, TeamMode.VOTE), (4, TeamMode.FIRST)):
        for seed in range(4):
            # clocks often, so that automatic plays, votes and expired votes all come up; long
            # enough tables to reach mão de onze / dez and de ferro
            sample = sample_table(table_id=TABLE, config=MatchConfig(variant, seats, mode),
                                  hands=14, seed=seed, policy=random_policy(timeout_rate=0.25))
            records.extend(sample.records)
    said = await page_moves(page, records)
    for record, moves in zip(records, said, strict=True):
        assert moves == engine_moves(record), record["actions"]
    await page.context.close()


def scripted(*wants: str) -> Any:
    """A policy: each decision takes the first of `wants` the engine allows then, each want once
    ("covered": a covered play; "timeout" / "vote-timeout": the clock of the seat to play / to
    answer), else the seat's first card face up."""
    left = list(wants)

    def choose(state: MatchState, rng: random.Random) -> Action:
        options = [a for s in range(state.config.seats) for a in legal_actions(state, s)]
        plays = [a for a in options if a.kind is ActionKind.PLAY]
        for want in left:
            if (want == "timeout" and plays) or (want == "vote-timeout" and not plays):
                left.remove(want)
                return Action(pending(state)[0].seat, ActionKind.TIMEOUT)
            found = [a for a in options if (a.kind.value == want and not a.covered)
                     or (want == "covered" and a.covered)]
            if found:
                left.remove(want)
                return found[0]
        return next(a for a in plays if not a.covered) if plays else options[0]

    return choose


async def listed(page: Page) -> list[str]:
    """The moves section as a reader goes through it: each round's heading, then its lines."""
    return [" ".join(text.split()) for text in await page.locator(
        "#rec-moves h4, #rec-moves li").all_inner_texts()]


async def test_the_hand_page_names_a_special_hand(
    live_server: LiveServer, browser: Browser
) -> None:
    # a player's review: a mão de ferro's page said only that cards were played "às cegas"
    page = await new_page(browser, live_server)
    await signup(page, live_server, "ferro_1")
    await house_key(page, sample_signing_key())
    sample = sample_table(table_id=TABLE, config=MatchConfig(Variant.MINEIRO, 2), hands=40, seed=0)
    await serve_chain(page, TABLE, [sample.anchor_statement, *sample.records])
    said: dict[tuple[int, ...], str | None] = {}
    for index in (0, 3, 9):
        await open_hand(page, live_server, sample.records[index])
        await expect(page.locator("#verdict")).to_have_attribute("data-state", "ok")
        said[tuple(sample.records[index]["score_before"])] = (
            await page.locator("#rec-variant").text_content())
    assert said == {
        (0, 0): f"Mineiro, 2 lugares, mesa {TABLE}, mão 1",
        (10, 0): f"Mineiro, 2 lugares, mesa {TABLE}, mão 4; mão de dez: vale 4 se jogada",
        (10, 10): f"Mineiro, 2 lugares, mesa {TABLE}, mão 10; mão de ferro: às cegas, vale 2",
    }, said


async def test_the_hand_page_lists_a_real_hands_moves(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "jogadas_1")  # what a browser keeps is its player's
    await house_key(page, sample_signing_key())

    async def opened(config: MatchConfig, *wants: str, seat: int | None = None) -> list[str]:
        sample = sample_table(table_id=TABLE, config=config, hands=1, seed=3,
                              policy=scripted(*wants))
        await serve_chain(page, TABLE, [sample.anchor_statement, *sample.records])
        record = sample.records[0]
        if seat is not None:
            await played_here(page, record, seat)
        await open_hand(page, live_server, record)
        await expect(page.locator("#verdict")).to_have_attribute("data-state", "ok")
        return await listed(page)

    # Paulista (vira 4♥: the fives are manilhas): a truco asked and accepted, a covered card
    # (its face is in the public record: docs/RULE_DECISIONS.md 16), each round's result
    assert await opened(MatchConfig(Variant.PAULISTA, 2), "raise", "accept", "covered") == [
        "Rodada 1",
        "Lugar 1 pediu truco! (vale 3)",
        "Lugar 2 aceitou: a mão vale 3",
        "Lugar 1 jogou 2 ♠",
        "Lugar 2 jogou 7 ♥",
        "Rodada 1: Lugar 1 ganhou",
        "Rodada 2",
        "Lugar 1 cobriu uma carta: 6 ♥",
        "Lugar 2 jogou 11 ♥",
        "Rodada 2: Lugar 2 ganhou",
        "Rodada 3",
        "Lugar 2 jogou A ♠",
        "Lugar 1 jogou 12 ♠",
        "Rodada 3: Lugar 2 ganhou",
    ]
    await expect(page.locator("#rec-moves li.mine")).to_have_count(0)
    # the cards are the page's cards, named for a screen reader
    covered = page.locator('#rec-moves li[data-do="play"]').nth(2).locator(".card")
    await expect(covered).to_have_attribute("aria-label", "6 de copas")
    await expect(page.locator("#moves-covered")).to_be_visible()  # said where one was covered
    # Argentino, played here in seat 2: an envido and its quiero, the clock's automatic play
    # (the weakest card: the 6), a truco; my moves are mine
    assert await opened(MatchConfig(Variant.ARGENTINO, 2), "envido", "accept", "timeout",
                        "raise", "accept", seat=1) == [
        "Rodada 1",
        "Lugar 1 cantou envido!",
        "Você disse quiero ao envido (envido)",
        "Lugar 1 jogou 6 ♥ (automático)",
        "Você pediu truco! (vale 2)",
        "Lugar 1 disse quiero: a mão vale 2",
        "Você jogou 7 ♥",
        "Rodada 1: Você ganhou",
        "Rodada 2",
        "Você jogou 11 ♥",
        "Lugar 1 jogou 2 ♠",
        "Rodada 2: Lugar 1 ganhou",
        "Rodada 3",
        "Lugar 1 jogou 12 ♠",
        "Você jogou A ♠",
        "Rodada 3: Você ganhou",
    ]
    await expect(page.locator("#rec-moves li.mine")).to_have_count(5)
    await expect(page.locator("#moves-covered")).to_be_hidden()  # Argentino covers nothing
    await expect(page.locator("#rec-moves li.automatic")).to_have_text(
        "Lugar 1 jogou 6♥ (automático)")
    # 2x2, voting, played here in seat 4: my truco, the other team's two clocks voting to run
    # (automatic votes), then that team's answer
    assert await opened(MatchConfig(Variant.PAULISTA, 4, TeamMode.VOTE), "raise", "vote-timeout",
                        "vote-timeout", seat=3) == [
        "Rodada 1",
        "Você pediu truco! (vale 3)",
        "Lugar 1 votou: correr (automático)",
        "Lugar 3 votou: correr (automático)",
        "Dupla A correu: sua dupla marca 1 ponto",
    ]
    # the section is found by its heading, each round by its own
    section = page.get_by_role("heading", name="Jogadas", exact=True)
    await expect(section).to_be_visible()
    await expect(page.get_by_role("list", name="Rodada 1")).to_have_count(1)
    assert not live_server.page_errors
    await page.context.close()


async def test_a_round_of_only_covered_cards_ties(
    live_server: LiveServer, browser: Browser
) -> None:
    # a mutation audit: a round of only covered cards ties (docs/RULE_DECISIONS.md 16); where both
    # seats cover, moves.js gave it to the stronger face (the 6♥ and the 11♥ here)
    sample = sample_table(table_id=TABLE, config=MatchConfig(Variant.PAULISTA, 2), hands=1,
                          seed=3, policy=scripted("covered", "covered"))
    record = sample.records[0]
    expected = engine_moves(record)
    assert [m for m in expected if m[0] == 2] == [
        [2, 2, 0, "play", "6H"], [2, 3, 1, "play", "JH"], [2, None, None, "round", None]]
    assert [a.get("covered") for a in record["actions"] if a["do"] == "play"][2:4] == [True, True]
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verify"))
    assert await page_moves(page, [record]) == [expected]
    await page.context.close()
