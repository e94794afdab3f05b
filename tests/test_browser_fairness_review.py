"""What a player's fairness review found in the browser's checks, fixed.

- A hand's seed is trusted only when it was fixed before the hand: the hand page hashes the
  record's seed down to the seed anchor the house signed before the chain's first hand (the
  `seed-chain` check, from `/tables/{id}/chain`), and compares the record's commitment with the
  one this browser was shown before the deal when it played the hand (`seen`); the live table
  compares them too. SHA-256(seed) = commitment holds for any seed a house makes up, so without
  either the page does not say `Verificado`.
- Without the house's key (`/api/key` unavailable) a record signed by any key is not
  `Verificado` (hand page and `/verify`); a record signed by a key the house does not publish is
  said so, not blamed on the deck.
- The offline command carries my contribution (`--mine`, or `--mine-text` for a phrase, quoted
  for a shell), and runs.
- In a browser without Ed25519 a new chain's anchor is no ✓.
- `/me/hands` lists hands unnumbered; `1 rejeitado`; the skip status says what it means.

The forged records and keys are served through Playwright routes; the pages are the real ones.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, Route, expect

from tests.test_browser_fairness import NO_ED25519
from tests.test_browser_hand_source import json_route
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    LiveServer,
    Policy,
    browser_fixture,
    create_table,
    kept_js,
    live_server_fixture,
    new_page,
    play_hand,
    signup,
)
from truco.fairness import deal_cards, derive_deck, draw_first_dealer
from truco.records import SIGNATURE_FIELDS, RecordEnd, key_id_for
from truco.variants import MatchConfig, TeamMode, Variant
from verifier.samples import sample_signing_key, sample_table
from verifier.signing import SigningKey, sign_record, sign_statement, signing_key_from_seed

pytestmark = pytest.mark.timeout(180)

TABLE = "0123456789abcdef"
SAMPLE = sample_table(
    table_id=TABLE, config=MatchConfig(Variant.PAULISTA, 2, TeamMode.VOTE), hands=4, seed=11
)
RECORDS = SAMPLE.records
ANCHOR = SAMPLE.anchor_statement
HOUSE = sample_signing_key()  # the sample records' signer: made the house's key here
OTHER = signing_key_from_seed(
    hashlib.sha256(b"fairness review: a key the house never had").digest()
)
# the test server signs with this seed (tests/conftest.py)
SERVER_KEY = signing_key_from_seed(bytes(range(32)))
VENV_BIN = Path(sys.executable).parent


def public(key: SigningKey) -> str:
    return bytes(key.verify_key).hex()


def key_id(key: SigningKey) -> str:
    return key_id_for(bytes(key.verify_key))


def resigned(record: dict[str, Any], key: SigningKey) -> dict[str, Any]:
    return sign_record({k: v for k, v in record.items() if k not in SIGNATURE_FIELDS}, key)


def regrind(record: dict[str, Any], key: SigningKey) -> dict[str, Any]:
    """The same hand with a seed chosen after the players' entropy, as a dishonest house would:
    the contributions kept, the commitment, deck and deal recomputed from the new seed (a drawn
    dealer kept too), signed. Every check of the record alone passes."""
    contributions = [None if c is None else bytes.fromhex(c) for c in record["contributions"]]
    dealer = record["dealer"]["seat"]
    for attempt in range(256):
        seed = hashlib.sha256(b"ground after the entropy %d" % attempt).digest()
        if (
            record["dealer"]["by"] == "draw"
            and draw_first_dealer(seed, record["table"], contributions, record["seats"]) != dealer
        ):
            continue
        deck = derive_deck(seed, record["table"], record["hand"], contributions)
        deal = deal_cards(deck, Variant(record["variant"]), record["seats"], dealer)
        unsigned = {k: v for k, v in record.items() if k not in SIGNATURE_FIELDS}
        unsigned.update(
            seed=seed.hex(),
            commitment=hashlib.sha256(seed).hexdigest(),
            deck=[str(c) for c in deck],
            deal={
                "hands": [[str(c) for c in cards] for cards in deal.hands],
                "vira": None if deal.vira is None else str(deal.vira),
            },
        )
        return sign_record(unsigned, key)
    raise AssertionError("no seed drew the same dealer")


FORGED_2 = regrind(RECORDS[1], HOUSE)


async def house_key(page: Page, key: SigningKey | None) -> None:
    """Route /api/key: that key as the house's (no hand-overs), or unavailable (None)."""
    await page.unroute(re.compile(r"/api/key$"))
    if key is None:
        await page.route(re.compile(r"/api/key$"), json_route({"error": "x"}, status=503))
        return
    body = {"key_id": key_id(key), "public_key": public(key), "scheme": "ed25519", "handovers": []}
    await page.route(re.compile(r"/api/key$"), json_route(body))


async def serve_chain(page: Page, table: str, entries: list[dict[str, Any]] | None) -> None:
    """Route `/tables/{table}/chain` (its signed seed anchors are what the hand page uses); None
    leaves it to the real server (404 for a table it never had)."""
    await page.unroute(re.compile(rf"/tables/{table}/chain$"))
    if entries is not None:
        await page.route(re.compile(rf"/tables/{table}/chain$"), json_route(entries))


async def open_hand(page: Page, live: LiveServer, record: dict[str, Any]) -> None:
    hand = record["hand"]
    await page.unroute(re.compile(rf"/hands/{record['table']}-{hand}$"))
    await page.route(re.compile(rf"/hands/{record['table']}-{hand}$"), json_route(record))
    await page.goto(live.url(f"/h/{record['table']}/{hand}"))


def check(page: Page, name: str) -> Any:
    return page.locator(f'#checks [data-check="{name}"]')


async def test_a_seed_chosen_after_the_entropy_fails_against_the_signed_anchor(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await house_key(page, HOUSE)
    await serve_chain(page, TABLE, [ANCHOR, *RECORDS])
    verdict = page.locator("#verdict")
    when = page.locator("#rec-commitment-when")
    # the genuine hands: their seeds hash down to the anchor signed before hand 1
    for record in RECORDS[:3]:
        await open_hand(page, live_server, record)
        await expect(verdict).to_have_attribute("data-state", "ok")
        await expect(verdict).to_have_text(
            re.compile(
                r"^Verificado: a semente é da cadeia que a casa assinou antes da mão; e o baralho"
            )
        )
        await expect(check(page, "seed-chain")).to_have_attribute("data-status", "pass")
        # a 1x1 match is won by a seat, not a "dupla"
        won = record["match_winner"]
        if won is not None:
            await expect(page.locator("#rec-score")).to_contain_text(
                f"(partida ganha pelo lugar {won + 1})")
        times = record["hand"]
        await expect(check(page, "seed-chain")).to_contain_text(
            f"com SHA-256 aplicado {times} {'vez' if times == 1 else 'vezes'}, chega à âncora"
        )
        await expect(when).to_have_attribute("data-state", "ok")
    # hand 2 ground after the entropy: SHA-256(seed) = commitment, deck and deal all hold ...
    await open_hand(page, live_server, FORGED_2)
    for name in ("key", "signature", "commitment", "deck", "deal"):
        await expect(check(page, name)).to_have_attribute("data-status", "pass")
    # ... but the seed is not of the chain the house signed before the hand
    await expect(verdict).to_have_attribute("data-state", "fail")
    await expect(verdict).to_contain_text("FALHOU: cadeia de sementes.")
    await expect(verdict).to_contain_text(
        "pode ter sido escolhida depois da entropia dos jogadores"
    )
    await expect(check(page, "seed-chain")).to_have_attribute("data-status", "fail")
    await expect(check(page, "seed-chain")).to_contain_text(
        "não chega à âncora que a casa assinou antes da mão 1"
    )
    await expect(when).to_have_attribute("data-state", "fail")
    # an anchor the house's key did not sign proves nothing
    await serve_chain(
        page,
        TABLE,
        [
            sign_statement({k: v for k, v in ANCHOR.items() if k not in SIGNATURE_FIELDS}, OTHER),
            *RECORDS,
        ],
    )
    await open_hand(page, live_server, RECORDS[1])
    await expect(verdict).to_have_attribute("data-state", "fail")
    await expect(check(page, "seed-chain")).to_contain_text(
        f"essa âncora foi assinada por {key_id(OTHER)}, uma chave que a casa não publica"
    )
    # a hand index past the anchor's length fails before any hashing
    short = sign_statement(
        {k: v for k, v in ANCHOR.items() if k not in SIGNATURE_FIELDS} | {"length": 2}, HOUSE
    )
    await serve_chain(page, TABLE, [short, *RECORDS])
    await open_hand(page, live_server, RECORDS[2])
    await expect(check(page, "seed-chain")).to_have_attribute("data-status", "fail")
    await expect(check(page, "seed-chain")).to_contain_text("que tem só 2")


async def test_without_the_anchor_or_a_seen_commitment_nothing_is_verificado(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "ancora_1")  # what a browser keeps is its player's
    await house_key(page, HOUSE)
    verdict = page.locator("#verdict")
    when = page.locator("#rec-commitment-when")
    # no chain for this table on this server: the seed's time cannot be checked
    await open_hand(page, live_server, FORGED_2)
    await expect(verdict).to_have_attribute("data-state", "warn")
    await expect(verdict).to_contain_text(
        "não foi possível conferir que a semente foi fixada antes da mão"
    )
    await expect(verdict).not_to_contain_text("Verificado")
    chain = check(page, "seed-chain")
    await expect(chain).to_have_attribute("data-status", "skip")
    await expect(chain).to_contain_text(
        "cadeia de sementes (seed-chain): não conferido aqui (confira na linha de comando)"
    )
    # the label claims nothing it did not check
    await expect(page.locator("#details dl")).not_to_contain_text("publicado antes da mão")
    await expect(when).to_have_attribute("data-state", "unknown")
    await expect(when).to_contain_text("não conferido")
    # a chain the house serves without the anchor of this hand's seed chain
    await serve_chain(page, TABLE, list(RECORDS))
    await open_hand(page, live_server, RECORDS[1])
    await expect(verdict).to_have_attribute("data-state", "warn")
    await expect(chain).to_have_attribute("data-status", "warn")
    await expect(chain).to_contain_text("a casa não publica a âncora assinada")

    # the commitment this browser was shown before hand 2 (kept by the table page), without
    # any chain: the genuine record keeps it, the ground one does not
    await serve_chain(page, TABLE, None)
    shown = RECORDS[1]["commitment"]
    await page.evaluate(
        kept_js("[table, commitment]", """localStorage.setItem(kept("hands"), JSON.stringify([
             {table, hand: 2, variant: "paulista", seat: 0, bots: [1], at: 1, commitment}]))"""),
        [TABLE, shown],
    )
    await open_hand(page, live_server, RECORDS[1])
    await expect(verdict).to_have_attribute("data-state", "ok")
    await expect(verdict).to_contain_text(
        "o compromisso é o que a mesa mostrou a este navegador antes da mão"
    )
    await expect(check(page, "seen")).to_have_attribute("data-status", "pass")
    await expect(when).to_have_attribute("data-state", "ok")
    await open_hand(page, live_server, FORGED_2)
    await expect(verdict).to_have_attribute("data-state", "fail")
    await expect(verdict).to_contain_text("compromisso visto na mesa")
    await expect(check(page, "seen")).to_have_attribute("data-status", "fail")
    await expect(check(page, "seen")).to_contain_text(
        f"a mesa mostrou a este navegador o compromisso {shown[:16]}… antes da mão"
    )
    # kept apart from the played hands (a reload mid-hand): the same
    await page.evaluate(
        kept_js("[table, commitment]", """localStorage.removeItem(kept("hands"));
             localStorage.setItem(kept(`commitment:${table}-2`), commitment);"""),
        [TABLE, shown],
    )
    await page.reload()
    await expect(verdict).to_have_attribute("data-state", "fail")
    await expect(check(page, "seen")).to_have_attribute("data-status", "fail")


async def test_without_the_house_key_a_record_signed_by_anyone_is_not_verificado(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await house_key(page, None)
    await serve_chain(page, TABLE, [ANCHOR, *RECORDS])
    # a genuine hand re-signed by a key the house never had: only the key is wrong, and without
    # the house's key nothing tells (a seed ground after the entropy fails its anchor anyway)
    forged = resigned(RECORDS[1], OTHER)
    verdict = page.locator("#verdict")
    headline = "Conferido, mas sem a chave da casa: qualquer um poderia ter assinado este registro."
    await open_hand(page, live_server, forged)
    await expect(check(page, "key")).to_have_attribute("data-status", "warn")
    await expect(verdict).to_have_attribute("data-state", "warn")
    await expect(verdict).to_contain_text(headline)
    await expect(verdict).not_to_contain_text("Verificado")
    # the same on /verify, for a pasted record
    await page.goto(live_server.url("/verify"))
    await page.get_by_label("ou cole o JSON do registro").fill(json.dumps(forged))
    await page.get_by_role("button", name="Verificar").click()
    await expect(verdict).to_have_attribute("data-state", "warn")
    await expect(verdict).to_contain_text(headline)
    await expect(page.locator("#cli-command")).to_contain_text(
        "sem --key: fixe a chave publicada pela casa"
    )


async def test_a_key_the_house_does_not_publish_is_named_not_blamed_on_the_deck(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    # the house's key changed, and no hand-over was published: a genuine record (its table's
    # chain not served here: only the record's key is wrong)
    await house_key(page, OTHER)
    await open_hand(page, live_server, RECORDS[1])
    verdict = page.locator("#verdict")
    meaning = (
        "Assinado por uma chave que a casa não publica (a chave da casa mudou sem passagem"
        " publicada, ou o registro não é da casa)."
    )
    await expect(verdict).to_have_attribute("data-state", "fail")
    await expect(verdict).to_contain_text(f"FALHOU: chave. {meaning}")
    await expect(verdict).not_to_contain_text("o baralho não saiu da semente")
    for name in ("signature", "commitment", "deck", "deal"):
        await expect(check(page, name)).to_have_attribute("data-status", "pass")
    # with the table's chain, whose seed anchor the old key signed too: still the key, not the seed
    await serve_chain(page, TABLE, [ANCHOR, *RECORDS])
    await open_hand(page, live_server, RECORDS[1])
    await expect(verdict).to_have_text(
        f"FALHOU: chave, cadeia de sementes. {meaning} A âncora da cadeia de sementes foi"
        " assinada por uma chave que a casa não publica. O baralho e a distribuição saem da"
        " semente, mas sem a assinatura da casa isso não prova nada: confira a chave que a casa"
        " publica fora deste site."
    )
    await expect(check(page, "seed-chain")).to_contain_text(
        f"a semente chega à âncora da cadeia a partir da mão 1, mas essa âncora foi assinada por"
        f" {key_id(HOUSE)}, uma chave que a casa não publica"
    )
    await serve_chain(page, TABLE, None)
    # a deck that is not the seed's is said so
    await house_key(page, HOUSE)
    tampered = dict(
        RECORDS[1], deck=[RECORDS[1]["deck"][1], RECORDS[1]["deck"][0], *RECORDS[1]["deck"][2:]]
    )
    await open_hand(page, live_server, resigned(tampered, HOUSE))
    await expect(verdict).to_have_attribute("data-state", "fail")
    await expect(verdict).to_contain_text("FALHOU: baralho. O baralho não sai da semente")
    await expect(verdict).not_to_contain_text("chave")


async def test_the_offline_command_carries_my_contribution_quoted_for_a_shell(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "comando_1")  # what a browser keeps is its player's
    await house_key(page, HOUSE)
    await serve_chain(page, TABLE, [ANCHOR, *RECORDS])
    record = next(r for r in RECORDS if isinstance(r["contributions"][0], str))
    mine = record["contributions"][0]
    await page.goto(live_server.url("/verify"))
    await page.evaluate(
        kept_js("[key, hex]", "localStorage.setItem(kept(key), hex)"),
        [f"mine:{TABLE}-{record['hand']}", mine],
    )
    await open_hand(page, live_server, record)
    await expect(check(page, "mine")).to_have_attribute("data-status", "pass")
    url = f"{live_server.base}/hands/{TABLE}-{record['hand']}"
    as_text = bytes.fromhex(mine).decode("utf-8", "replace")
    option = f"--mine {mine}" if "\ufffd" in as_text else f"--mine-text={as_text}"
    await expect(page.locator("#cli-command")).to_have_text(
        f"barajamos-verify hand {url} --key {public(HOUSE)} {option}"
    )
    await expect(page.locator("#cli-mine-note")).to_be_visible()
    # a pasted record of a table with a quote in its id, and a phrase as my contribution:
    # every word quoted for a shell, the phrase given as text
    odd = "mesa d'ana $(x)"
    phrase = "-minha avó's ☕"
    other = sample_table(
        table_id=odd, config=MatchConfig(Variant.MINEIRO, 2, TeamMode.VOTE), hands=1, seed=3
    ).records[0]
    unsigned = {k: v for k, v in other.items() if k not in SIGNATURE_FIELDS}
    contributions = [
        phrase.encode(),
        *(None if c is None else bytes.fromhex(c) for c in other["contributions"][1:]),
    ]
    seed = bytes.fromhex(other["seed"])
    deck = derive_deck(seed, odd, 1, contributions)
    dealer = draw_first_dealer(seed, odd, contributions, 2)
    deal = deal_cards(deck, Variant.MINEIRO, 2, dealer)
    unsigned.update(
        contributions=[None if c is None else c.hex() for c in contributions],
        deck=[str(c) for c in deck],
        dealer={"seat": dealer, "by": "draw"},
        deal={"hands": [[str(c) for c in cards] for cards in deal.hands], "vira": None},
        actions=[],
        end="cancelled",
        score_after=[0, 0],
        match_winner=None,
    )
    pasted = sign_record(unsigned, HOUSE)
    await page.get_by_label("ou cole o JSON do registro").fill(json.dumps(pasted))
    await page.get_by_label("Chave pública da casa").fill(public(HOUSE))
    await page.get_by_label("Minha contribuição").fill(phrase.encode().hex())
    await page.get_by_role("button", name="Verificar").click()
    await expect(check(page, "mine")).to_have_attribute("data-status", "pass")
    await expect(page.locator("#cli-command")).to_have_text(
        "barajamos-verify hand 'mesa d'\\''ana $(x)-1.json'"
        f" --key {public(HOUSE)}"
        " --mine-text='-minha avó'\\''s ☕'"
    )
    # not a table of this house: its seed chain is left to the command line, and said so
    await expect(check(page, "seed-chain")).to_have_attribute("data-status", "skip")
    await expect(page.locator("#verdict")).to_have_attribute("data-state", "warn")


async def test_my_hands_list_unnumbered_and_the_words_of_the_checks(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "revisao_1")
    await page.route(
        re.compile(r"/api/me/tables$"), json_route({"tables": [{"id": TABLE}], "next": None})
    )
    await serve_chain(page, TABLE, [ANCHOR, *RECORDS])
    await page.goto(live_server.url("/me/hands"))
    section = page.locator(f'#hands-list section[data-table="{TABLE}"]')
    await expect(section.locator(".hand-list li")).to_have_count(len(RECORDS))
    # newest first, without list numbers that fight the hand numbers ("1. Mão 4")
    assert await section.locator(".hand-list").first.evaluate("(n) => n.tagName") == "UL"
    await expect(section.locator(".hand-list li").first).to_contain_text(f"Mão {len(RECORDS)}")
    # one rejected byte is "1 rejeitado"
    many = sample_table(
        table_id=TABLE, config=MatchConfig(Variant.PAULISTA, 2, TeamMode.VOTE), hands=16, seed=5
    ).records
    details = await page.evaluate(
        """async (records) => {
             const f = await import("/static/js/fairness.js");
             const out = [];
             for (const r of records) {
               const result = await f.verifyHandRecord(r);
               out.push(result.checks.find((c) => c.name === "deck").detail);
             }
             return out;
           }""",
        list(many),
    )
    counts = [int(re.search(r"(\d+) rejeitados?\)", d).group(1)) for d in details]  # type: ignore[union-attr]
    assert 1 in counts, counts
    for detail, count in zip(details, counts, strict=True):
        assert detail.endswith(f"{count} {'rejeitado' if count == 1 else 'rejeitados'})"), detail
    # a hand number with a leading zero is the hand's one address
    await page.goto(live_server.url(f"/h/{TABLE}/02"))
    await expect(page).to_have_url(live_server.url(f"/h/{TABLE}/2"))


# --- the live table (table.js) --------------------------------------------------------------


async def test_my_hands_are_grouped_by_match_newest_first(
    live_server: LiveServer, browser: Browser
) -> None:
    # a table's hands were one list: a rematch's "Mão 22 — 0 x 0" sat under "Mão 21 — 11 x 11
    # → 12 x 11" with nothing between the matches
    sample = sample_table(table_id=TABLE, config=MatchConfig(Variant.MINEIRO, 2, TeamMode.VOTE),
                          hands=40, seed=11, last_end=RecordEnd.ABANDONMENT)
    # the hands that end a match (the last one by an abandonment)
    ends = [r["hand"] for r in sample.records if r["match_winner"] is not None]
    assert len(ends) >= 3 and ends[-1] == len(sample.records)
    page = await new_page(browser, live_server)
    await signup(page, live_server, "revisao_2")
    await page.route(
        re.compile(r"/api/me/tables$"), json_route({"tables": [{"id": TABLE}], "next": None})
    )
    await serve_chain(page, TABLE, [sample.anchor_statement, *sample.records])
    await page.goto(live_server.url("/me/hands"))
    section = page.locator(f'#hands-list section[data-table="{TABLE}"]')
    titles = section.locator("h3.match-title")
    await expect(titles).to_have_count(len(ends))
    last = sample.records[-1]["score_after"]
    await expect(titles.first).to_have_text(
        f"Partida {len(ends)} (terminada por abandono, {last[0]} x {last[1]})")
    first = sample.records[ends[0] - 1]["score_after"]
    await expect(titles.last).to_have_text(f"Partida 1 (terminada em {first[0]} x {first[1]})")
    # each match's hands under its title, newest first
    first_match = section.locator("ul.hand-list").last.locator("li")
    await expect(first_match).to_have_count(ends[0])
    await expect(first_match.first).to_contain_text(f"Mão {ends[0]}")
    await expect(first_match.last).to_contain_text("Mão 1 ")
    await expect(section.locator(".hand-list li")).to_have_count(len(sample.records))


async def test_the_live_table_fails_a_record_that_drops_the_commitment_it_showed(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)

    async def ground(route: Route) -> None:
        # the house re-seeds hand 1 after the entropy, and signs it with its real key
        response = await route.fetch()
        forged = regrind(await response.json(), SERVER_KEY)
        await route.fulfill(status=200, content_type="application/json", body=json.dumps(forged))

    await page.route(re.compile(r"/hands/[0-9a-f]{16}-1$"), ground)
    await signup(page, live_server, "revisao_2")
    table_id = await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    await expect(page.locator("#fair-commitment")).to_have_text(re.compile(r"^[0-9a-f]{64}$"))
    shown = await page.locator("#fair-commitment").text_content()
    assert await play_hand(page, Policy()) == 1
    last = page.locator("#fair-last")
    await expect(last).to_have_attribute("data-state", "fail")
    await expect(last).to_contain_text("FALHOU (seen)")
    await expect(last).to_contain_text("não é o compromisso que a mesa mostrou antes da mão")
    # the commitment the table showed is kept with the played hand
    played = await page.evaluate(
        kept_js("", "return JSON.parse(localStorage.getItem(kept('hands')))"))
    assert any(
        h["table"] == table_id and h["hand"] == 1 and h["commitment"] == shown for h in played
    ), played
    # and the hand page compares with it (and with the signed anchor)
    await page.goto(live_server.url(f"/h/{table_id}/1"))
    await expect(page.locator("#verdict")).to_have_attribute("data-state", "fail")
    await expect(check(page, "seen")).to_have_attribute("data-status", "fail")
    await expect(check(page, "seed-chain")).to_have_attribute("data-status", "fail")


async def test_a_phrase_hand_checks_clean_and_its_offline_command_runs(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "revisao_3")
    table_id = await create_table(page, "mineiro", 2, "training")
    phrase = "-minha avó's ☕ $(touch /nunca)"
    await page.get_by_label("Usar uma frase como entropia").fill(phrase)
    await page.get_by_role("button", name="Começar contra os robôs").click()
    await expect(page.locator("#fair-mine")).to_have_text(phrase.encode().hex())
    hand = await play_hand(page, Policy())
    await expect(page.locator("#fair-last")).to_have_attribute("data-state", "ok")
    await page.goto(live_server.url(f"/h/{table_id}/{hand}"))
    verdict = page.locator("#verdict")
    await expect(verdict).to_have_attribute("data-state", "ok")
    await expect(verdict).to_contain_text(
        "Verificado: a semente é da cadeia que a casa assinou antes da mão, e o compromisso é o"
        " que a mesa mostrou a este navegador antes da mão"
    )
    for name in ("seen", "seed-chain", "mine"):
        await expect(check(page, name)).to_have_attribute("data-status", "pass")
    command = await page.locator("#cli-command").text_content()
    assert command is not None
    assert "--mine-text='-minha avó'\\''s ☕ $(touch /nunca)'" in command, command
    # the command, as copied, in a shell: it checks the hand and my phrase in it
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    process = await asyncio.create_subprocess_exec(
        "sh",
        "-c",
        command,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, (out.decode(), err.decode())
    assert re.search(r"PASS\s+mine", out.decode()), out.decode()


async def test_without_ed25519_a_new_chains_anchor_is_no_checkmark(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await page.add_init_script(NO_ED25519)
    await signup(page, live_server, "revisao_4")
    await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    chain = page.locator("#fair-chain")
    await expect(chain).to_contain_text("nova cadeia a partir da mão 1")
    await expect(chain).to_have_attribute("data-state", "unknown")
    await expect(chain).to_contain_text("a assinatura não pôde ser conferida neste navegador")
    await expect(chain).not_to_contain_text("✓")
    await expect(chain).not_to_contain_text("conferida pela linha de comando")
