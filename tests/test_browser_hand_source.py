"""The browser's record checks ask for a hand and verify that hand, not another one.

A server (or anything in the way) answering `/hands/{table}-{n}` with another hand's genuine
signed record must not pass on the hand page, nor in the live table's checks, whose next
commitment check must not lean on the seed of a record that failed. `/me/hands` shows the chain's
offline command with the house key pinned, as the hand page does.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.async_api import Browser, Page, Route, expect

from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    LiveServer,
    Policy,
    browser_fixture,
    create_table,
    live_server_fixture,
    new_page,
    play_hand,
    signup,
)
from truco.variants import MatchConfig, TeamMode, Variant
from verifier.samples import sample_table
from verifier.vectors_run import load_vectors

pytestmark = pytest.mark.timeout(180)

TABLE = "0123456789abcdef"
TEST_KEY = load_vectors("hand.json")["public_key"]
SAMPLE = sample_table(
    table_id=TABLE, config=MatchConfig(Variant.PAULISTA, 2, TeamMode.VOTE), hands=5, seed=11
)
RECORDS = SAMPLE.records


def json_route(body: Any, status: int = 200) -> Any:
    async def fulfil(route: Route) -> None:
        await route.fulfill(status=status, content_type="application/json", body=json.dumps(body))

    return fulfil


async def pin_the_test_key(page: Page) -> None:
    """The sample records are signed with the public test key: make it the house's here."""
    await page.route(re.compile(r"/api/key$"),
                     json_route({"key_id": "00" * 8, "public_key": TEST_KEY}))  # fmt: skip


async def test_the_hand_page_refuses_another_hands_record(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await pin_the_test_key(page)
    # the table's chain, with the seed anchor the house signed before its first hand
    await page.route(re.compile(rf"/tables/{TABLE}/chain$"),
                     json_route([SAMPLE.anchor_statement, *RECORDS]))  # fmt: skip
    # hand 3 asked for, hand 5's genuine record answered
    await page.route(re.compile(rf"/hands/{TABLE}-3$"), json_route(RECORDS[4]))
    await page.route(re.compile(rf"/hands/{TABLE}-5$"), json_route(RECORDS[4]))
    await page.goto(live_server.url(f"/h/{TABLE}/3"))
    verdict = page.locator("#verdict")
    await expect(verdict).to_have_attribute("data-state", "fail")
    await expect(verdict).to_contain_text("registro de outra mão")
    source = page.locator('#checks [data-check="source"]')
    await expect(source).to_have_attribute("data-status", "fail")
    await expect(source).to_contain_text(
        f"pedida a mão 3 da mesa {TABLE}, o registro é a mão 5 da mesa {TABLE}"
    )
    # every other check of the genuine record passes: only the hand asked for is wrong
    for name in ("key", "signature", "commitment", "deck", "deal"):
        await expect(page.locator(f'#checks [data-check="{name}"]')).to_have_attribute(
            "data-status", "pass"
        )
    # the hand it is passes, and says so
    await page.goto(live_server.url(f"/h/{TABLE}/5"))
    await expect(verdict).to_have_attribute("data-state", "ok")
    await expect(source).to_have_attribute("data-status", "pass")
    # a pasted record is not checked against the page's hand (it is any record the user has)
    await page.get_by_label("ou cole o JSON do registro").fill(json.dumps(RECORDS[1]))
    await page.get_by_role("button", name="Verificar").click()
    await expect(verdict).to_have_attribute("data-state", "ok")
    await expect(verdict).to_contain_text("Verificado: a semente é da cadeia que a casa assinou")
    await expect(source).to_have_count(0)


async def test_the_live_table_refuses_another_hands_record_and_keeps_no_seed_of_it(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await pin_the_test_key(page)
    # the finished hand 1 answered with another table's genuine record (signed by the pinned key)
    await page.route(re.compile(r"/hands/[0-9a-f]{16}-1$"), json_route(RECORDS[0]))
    await signup(page, live_server, "fonte_1")
    table_id = await create_table(page, "paulista", 2, "training")
    assert table_id != TABLE
    await page.get_by_role("button", name="Começar contra os robôs").click()
    assert await play_hand(page, Policy()) == 1
    last = page.locator("#fair-last")
    await expect(last).to_have_attribute("data-state", "fail")
    await expect(last).to_contain_text("FALHOU (source")
    await expect(last).to_contain_text(
        f"pedida a mão 1 da mesa {table_id}, o registro é a mão 1 da mesa {TABLE}"
    )
    # hand 2's commitment is not compared with the failed record's seed (which would call the
    # house's honest commitment a lie): there is no trusted seed to compare with
    chain = page.locator("#fair-chain")
    await expect(chain).to_contain_text("o registro da mão 1 não passou na conferência")
    await expect(chain).to_have_attribute("data-state", "unknown")


async def test_my_hands_pins_the_house_key_in_the_chain_command(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "fonte_2")
    await page.route(re.compile(r"/api/me/tables$"),
                     json_route({"tables": [{"id": TABLE}], "next": None}))
    await page.route(re.compile(rf"/tables/{TABLE}/chain$"), json_route(list(RECORDS)))
    house_key = json.loads(await page.evaluate("async () => (await fetch('/api/key')).text()"))
    await page.goto(live_server.url("/me/hands"))
    command = page.locator(f'#hands-list section[data-table="{TABLE}"] code')
    await expect(command).to_have_text(
        f"barajamos-verify chain {live_server.base}/tables/{TABLE}/chain"
        f" --key {house_key['public_key']}"
    )
    # without the house key the command says to pin it, as the hand page's does
    await page.route(re.compile(r"/api/key$"), json_route({"error": "x"}, status=503))
    await page.reload()
    await expect(command).to_contain_text("sem --key: fixe a chave publicada pela casa")
