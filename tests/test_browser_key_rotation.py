"""The browser trusts the house's key lineage: its current key and the older ones handed over.

After a signing-key rotation `/api/key` publishes the current key with the signed `key_handover`
statements (docs/FAIRNESS.md 8) that lead to it. The hand page, `/me/hands` and the live table
then accept records (and seed anchors) signed by an older key that handed over, directly or
through several hand-overs, to the current one, say which key signed, and pin every key of the
lineage in the offline commands; a forged hand-over (a signature that does not verify, a
`new_key_id` that is not the new key's id) trusts nothing, and without hand-overs nothing changes.
`/api/key` and the records are routed through Playwright; the pages are the real ones.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect

from tests.test_browser_fairness import NO_ED25519
from tests.test_browser_hand_source import json_route
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
from truco.fairness import canonical_json
from truco.records import SIGNATURE_FIELDS, build_key_handover, key_id_for
from truco.variants import MatchConfig, TeamMode, Variant
from verifier.samples import sample_signing_key, sample_table
from verifier.signing import SigningKey, sign_record, sign_statement, signing_key_from_seed

pytestmark = pytest.mark.timeout(180)

TABLE = "0123456789abcdef"
# the sample records are signed by the public test key: here it is the house's OLD key
OLD = sample_signing_key()
MID = signing_key_from_seed(hashlib.sha256(b"key rotation test: middle key").digest())
NEW = signing_key_from_seed(hashlib.sha256(b"key rotation test: current key").digest())
SAMPLE = sample_table(
    table_id=TABLE, config=MatchConfig(Variant.PAULISTA, 2, TeamMode.VOTE), hands=3, seed=11
)
RECORDS = SAMPLE.records
AT = 1_767_225_600  # 2026-01-01
ABSENT = object()  # an older server's /api/key, without `handovers`


def public(key: SigningKey) -> str:
    return bytes(key.verify_key).hex()


def key_id(key: SigningKey) -> str:
    return key_id_for(bytes(key.verify_key))


def handover(old: SigningKey, new: SigningKey) -> dict[str, Any]:
    """The statement the old key signs when the house rotates to the new one."""
    return sign_statement(build_key_handover(AT, bytes(new.verify_key)), old)


def sign_unchecked(unsigned: dict[str, Any], key: SigningKey) -> dict[str, Any]:
    """Signed as the house signs, but without validating it first (for forged statements)."""
    signed = dict(unsigned, key_id=key_id(key), public_key=public(key))
    signed["signature"] = key.sign(canonical_json(signed)).signature.hex()
    return signed


def resigned(record: dict[str, Any], key: SigningKey) -> dict[str, Any]:
    return sign_record({k: v for k, v in record.items() if k not in SIGNATURE_FIELDS}, key)


async def house_key(page: Page, current: SigningKey, handovers: Any = ABSENT) -> None:
    """Route /api/key: the current key, and its hand-overs unless ABSENT (an older server)."""
    body: dict[str, Any] = {"key_id": key_id(current), "public_key": public(current),
                            "scheme": "ed25519"}  # fmt: skip
    if handovers is not ABSENT:
        body["handovers"] = handovers
    await page.unroute(re.compile(r"/api/key$"))
    await page.route(re.compile(r"/api/key$"), json_route(body))


async def open_hand(
    page: Page, live: LiveServer, record: dict[str, Any], anchor_key: SigningKey = OLD
) -> None:
    """Route the record and its table's chain, whose seed anchor `anchor_key` signed."""
    hand = record["hand"]
    anchor = sign_statement(
        {k: v for k, v in SAMPLE.anchor_statement.items() if k not in SIGNATURE_FIELDS}, anchor_key
    )
    await page.unroute(re.compile(rf"/tables/{TABLE}/chain$"))
    await page.route(re.compile(rf"/tables/{TABLE}/chain$"), json_route([anchor, *RECORDS]))
    await page.unroute(re.compile(rf"/hands/{TABLE}-{hand}$"))
    await page.route(re.compile(rf"/hands/{TABLE}-{hand}$"), json_route(record))
    await page.goto(live.url(f"/h/{TABLE}/{hand}"))


def hand_command(live: LiveServer, hand: int, *keys: SigningKey) -> str:
    pins = " ".join(f"--key {public(k)}" for k in keys)
    return f"barajamos-verify hand {live.base}/hands/{TABLE}-{hand} {pins}"


async def test_a_record_signed_by_a_key_handed_over_passes_and_both_keys_are_pinned(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await house_key(page, NEW, [handover(OLD, NEW)])
    await open_hand(page, live_server, RECORDS[0])  # signed by the old key
    verdict = page.locator("#verdict")
    key = page.locator('#checks [data-check="key"]')
    await expect(verdict).to_have_attribute("data-state", "ok")
    await expect(key).to_have_attribute("data-status", "pass")
    await expect(key).to_contain_text(
        f"assinado por uma chave anterior da casa, {key_id(OLD)}, passada à atual, {key_id(NEW)}"
    )
    await expect(page.locator('#checks [data-check="signature"]')).to_have_attribute(
        "data-status", "pass"
    )
    # the offline command pins the whole lineage, oldest first
    await expect(page.locator("#cli-command")).to_have_text(hand_command(live_server, 1, OLD, NEW))
    # a record signed by the current key says so
    await open_hand(page, live_server, resigned(RECORDS[1], NEW))
    await expect(verdict).to_have_attribute("data-state", "ok")
    await expect(key).to_contain_text(f"assinado pela chave fixada da casa, {key_id(NEW)}")
    # and a record signed by a key outside the lineage still fails, named as such
    await open_hand(page, live_server, resigned(RECORDS[2], MID))
    await expect(verdict).to_have_attribute("data-state", "fail")
    await expect(key).to_have_attribute("data-status", "fail")
    await expect(key).to_contain_text(
        f"assinado por {key_id(MID)}, não pela chave fixada da casa"
        " nem por uma chave anterior passada a ela"
    )


async def test_a_sequence_of_handovers_in_any_order_trusts_every_older_key(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    # OLD -> MID -> NEW, published in the reverse order: the order does not matter
    await house_key(page, NEW, [handover(MID, NEW), handover(OLD, MID)])
    await open_hand(page, live_server, RECORDS[0])
    await expect(page.locator("#verdict")).to_have_attribute("data-state", "ok")
    key = page.locator('#checks [data-check="key"]')
    await expect(key).to_contain_text(
        f"chave anterior da casa, {key_id(OLD)}, passada à atual, {key_id(NEW)}"
        f" (passagens de chave {key_id(OLD)} → {key_id(MID)} → {key_id(NEW)})"
    )
    await expect(page.locator("#cli-command")).to_have_text(
        hand_command(live_server, 1, OLD, MID, NEW)
    )


def _bad_signature() -> dict[str, Any]:
    forged = handover(OLD, NEW)
    forged["at"] += 1  # changed after signing
    return forged


def _wrong_key_id() -> dict[str, Any]:
    # validly signed by the old key, but `new_key_id` names another key than `new_public_key`
    statement = dict(build_key_handover(AT, bytes(NEW.verify_key)), new_key_id=key_id(MID))
    return sign_unchecked(statement, OLD)


@pytest.mark.parametrize(
    ("forged", "reason"),
    [
        (
            _bad_signature,
            f"de {key_id(OLD)} para {key_id(NEW)}, tem uma assinatura que não confere",
        ),
        (_wrong_key_id, f"new_key_id {key_id(MID)} não é o id de new_public_key ({key_id(NEW)})"),
    ],
    ids=["bad-signature", "new-key-id-mismatch"],
)
async def test_a_forged_handover_trusts_nothing(
    live_server: LiveServer, browser: Browser, forged: Any, reason: str
) -> None:
    page = await new_page(browser, live_server)
    await house_key(page, NEW, [forged()])
    await open_hand(page, live_server, RECORDS[0])  # signed by the old key
    await expect(page.locator("#verdict")).to_have_attribute("data-state", "fail")
    key = page.locator('#checks [data-check="key"]')
    await expect(key).to_have_attribute("data-status", "fail")
    # the failure names the hand-over the house published and why it does not count
    await expect(key).to_contain_text(f"assinado por {key_id(OLD)}, não pela chave fixada da casa")
    await expect(key).to_contain_text(reason)
    # the old key is not pinned in the offline command either
    await expect(page.locator("#cli-command")).to_have_text(hand_command(live_server, 1, NEW))


@pytest.mark.parametrize("handovers", [ABSENT, []], ids=["absent", "empty"])
async def test_without_handovers_only_the_current_key_is_trusted(
    live_server: LiveServer, browser: Browser, handovers: Any
) -> None:
    page = await new_page(browser, live_server)
    await house_key(page, NEW, handovers)
    verdict = page.locator("#verdict")
    key = page.locator('#checks [data-check="key"]')
    # a house that only ever had the new key: it signed the record and the seed anchor
    await open_hand(page, live_server, resigned(RECORDS[0], NEW), anchor_key=NEW)
    await expect(verdict).to_have_attribute("data-state", "ok")
    await expect(key).to_contain_text(f"assinado pela chave fixada da casa, {key_id(NEW)}")
    await expect(page.locator("#cli-command")).to_have_text(hand_command(live_server, 1, NEW))
    # a record signed by the old key fails, as before any rotation
    await open_hand(page, live_server, RECORDS[1])
    await expect(verdict).to_have_attribute("data-state", "fail")
    await expect(key).to_have_text(
        f"chave (key): FALHOU — assinado por {key_id(OLD)}, não pela chave fixada da casa"
    )
    # the hand-over, once published, is what makes it pass
    await house_key(page, NEW, [handover(OLD, NEW)])
    await page.reload()
    await expect(verdict).to_have_attribute("data-state", "ok")
    await expect(key).to_contain_text(f"chave anterior da casa, {key_id(OLD)}")


async def test_my_hands_pins_every_key_of_the_lineage_in_the_chain_command(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "rotacao_1")
    statement = handover(OLD, NEW)
    await house_key(page, NEW, [statement])
    await page.route(re.compile(r"/api/me/tables$"),
                     json_route({"tables": [{"id": TABLE}], "next": None}))  # fmt: skip
    # the chain starts with the hand-over, then the records (old key), one re-signed by the new
    chain = [statement, *RECORDS[:2], resigned(RECORDS[2], NEW)]
    await page.route(re.compile(rf"/tables/{TABLE}/chain$"), json_route(chain))
    await page.goto(live_server.url("/me/hands"))
    section = page.locator(f'#hands-list section[data-table="{TABLE}"]')
    await expect(section.locator("code")).to_have_text(
        f"barajamos-verify chain {live_server.base}/tables/{TABLE}/chain"
        f" --key {public(OLD)} --key {public(NEW)}"
    )
    # the hand-over is not listed as a hand
    await expect(section.locator(".hand-list li")).to_have_count(3)


async def test_the_live_table_accepts_the_anchor_and_record_of_a_key_handed_over(
    live_server: LiveServer, browser: Browser
) -> None:
    # the test server signs with bytes(range(32)) (tests/conftest.py): made the OLD key here, the
    # house having since rotated to NEW
    server_key = signing_key_from_seed(bytes(range(32)))
    page = await new_page(browser, live_server)
    await house_key(page, NEW, [handover(server_key, NEW)])
    await signup(page, live_server, "rotacao_2")
    await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    chain = page.locator("#fair-chain")
    await expect(chain).to_have_attribute("data-state", "ok")
    await expect(chain).to_contain_text(
        f"âncora assinada por uma chave anterior da casa, {key_id(server_key)}, passada à atual"
    )
    await play_hand(page, Policy())
    last = page.locator("#fair-last")
    await expect(last).to_have_attribute("data-state", "ok")
    await expect(last).to_contain_text("semente, baralho e distribuição conferidos")


async def test_without_ed25519_the_handover_is_taken_on_the_houses_word_and_said_so(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await page.add_init_script(NO_ED25519)  # a browser without Ed25519 in WebCrypto
    await house_key(page, NEW, [handover(OLD, NEW)])
    await open_hand(page, live_server, RECORDS[0])
    verdict = page.locator("#verdict")
    key = page.locator('#checks [data-check="key"]')
    await expect(verdict).to_have_attribute("data-state", "ok")
    await expect(verdict).to_contain_text("A passagem da chave anterior da casa à atual também não")
    await expect(key).to_have_attribute("data-status", "pass")
    await expect(key).to_contain_text(f"chave anterior da casa, {key_id(OLD)}, passada à atual")
    await expect(key).to_contain_text(
        "a assinatura da passagem de chave não foi conferida aqui, e sim pela linha de comando"
    )
    await expect(page.locator('#checks [data-check="signature"]')).to_have_attribute(
        "data-status", "skip"
    )
    await expect(page.locator("#cli-command")).to_have_text(hand_command(live_server, 1, OLD, NEW))
    # what needs no Ed25519 is still checked: a new_key_id that is not the new key's id
    await house_key(page, NEW, [_wrong_key_id()])
    await page.reload()
    await expect(verdict).to_have_attribute("data-state", "fail")
    await expect(key).to_contain_text("não é o id de new_public_key")
