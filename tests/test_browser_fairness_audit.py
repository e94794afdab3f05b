"""What an independent audit of the fairness verifier found in the browser's checks, fixed.

- The `structure` check validates every action as the CLI does (FAIRNESS.md 7: one form per
  action): an unknown verb, a play without a card, a raise with a card, `"covered": false`,
  `"position": null`, a position past 2, an extra field, a blind play covered, a play by card
  and position are unreadable, and a signed record of nonsense actions with a made-up score is
  never `Verificado` (the replay is the CLI's); a genuine record with `"covered": false` added is
  unreadable, as the CLI says, not a failed signature.
- The offline check the hand page recommends covers the seed chain: it shows the table's `chain`
  command (a record alone cannot show its seed was fixed before the hand) before the `hand` one,
  and `/verificador` says which command checks what.
- A key typed on `/verify` is the person's, not "the house's": a record signed by another key is
  signed by "a key other than the one you typed", said to be the house's published key when it
  is (it was called "uma chave que a casa não publica").
- `/verificador` names every status the verifier prints (PASS, FAIL, WARN, skip) and its three
  exit codes (2: unreadable input or bad usage).
- A table id holding a lone surrogate is unreadable (`$.table`), as the CLI and FAIRNESS.md 6 say,
  not a failure.

The records and keys are served through Playwright routes; the pages are the real ones.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect

from tests.test_browser_fairness_review import (
    ANCHOR,
    HOUSE,
    OTHER,
    RECORDS,
    TABLE,
    check,
    house_key,
    key_id,
    open_hand,
    public,
    serve_chain,
)
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    LiveServer,
    browser_fixture,
    live_server_fixture,
    new_page,
)
from tests.test_verifier_audit import BAD_ACTIONS, KEY_HEX, VECTOR, with_first_action
from truco.records import SIGNATURE_FIELDS
from verifier.signing import sign_built_record, signing_key_from_seed

pytestmark = pytest.mark.timeout(180)

# a third key: neither the records' signer nor the one typed
THIRD = signing_key_from_seed(hashlib.sha256(b"fairness audit: a third key").digest())

_VERIFY_JS = """
async ({ records, key }) => {
  const f = await import("/static/js/fairness.js");
  const out = [];
  for (const record of records) {
    const result = await f.verifyHandRecord(JSON.stringify(record), { pinnedKey: key });
    out.push({ readable: result.readable, error: result.error,
               structure: result.checks.find((c) => c.name === "structure").status });
  }
  return out;
}
"""


# ------------------------------------------------------------------ actions in their one form


async def test_the_structure_check_refuses_every_action_the_cli_refuses(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verify"))
    records = [with_first_action(action) for action in BAD_ACTIONS.values()]
    got = await page.evaluate(_VERIFY_JS, {"records": records, "key": KEY_HEX})
    for case, result in zip(BAD_ACTIONS, got, strict=True):
        assert result["readable"] is False and result["structure"] == "fail", (case, result)
        # the same path the CLI names
        assert result["error"].startswith("$.actions[0]"), (case, result)
    # the two forms of a play, and the other verbs bare, read (their replay is the CLI's)
    fine = [
        {"seat": 0, "do": "play", "card": "4C"},
        {"seat": 0, "do": "play", "card": "4C", "covered": True},
        {"seat": 0, "do": "play", "position": 2},
        {"seat": 3, "do": "timeout"},
    ]
    got = await page.evaluate(
        _VERIFY_JS, {"records": [with_first_action(a) for a in fine], "key": KEY_HEX}
    )
    assert [r["readable"] for r in got] == [True] * len(fine), got
    # the wording names what is wrong
    messages = dict(zip(BAD_ACTIONS, (r["error"] for r in await page.evaluate(
        _VERIFY_JS, {"records": records, "key": KEY_HEX})), strict=True))
    assert "cheat" in messages["an unknown verb"]
    assert "não as duas" in messages["a play by card and position"]
    assert "nunca é coberta" in messages["a blind play covered"]
    assert '"covered": false não se escreve' in messages["covered false"]
    # in the record's own terms (seat 4 is the fifth seat; the pages say "lugar 1" for seat 0)
    assert messages["a seat past the seats"] == (
        "$.actions[0].seat: esperava um lugar de 0 a 3 (o registro conta os lugares a partir de"
        " 0), não 4")


def nonsense(record: dict[str, Any]) -> dict[str, Any]:
    """A hand of nonsense actions and a made-up score, signed by the house's key: every check
    the browser makes of the deal passes."""
    changed = record | {"actions": [{"seat": 0, "do": "cheat"}], "score_after": [11, 0]}
    unsigned = {k: v for k, v in changed.items() if k not in SIGNATURE_FIELDS}
    return sign_built_record(unsigned, HOUSE)  # sign_record would refuse it


async def test_a_signed_record_of_nonsense_actions_is_never_verificado(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await house_key(page, HOUSE)
    await serve_chain(page, TABLE, [ANCHOR, *RECORDS])
    verdict = page.locator("#verdict")
    await open_hand(page, live_server, RECORDS[1])
    await expect(verdict).to_have_attribute("data-state", "ok")  # the genuine hand
    await open_hand(page, live_server, nonsense(RECORDS[1]))
    await expect(verdict).to_have_attribute("data-state", "unreadable")
    await expect(verdict).to_have_text(
        'Registro ilegível: $.actions[0]: verbo (do) desconhecido: "cheat" (esperava play,'
        " raise, accept, decline, envido, real_envido, falta_envido, fold, timeout)"
    )
    await expect(check(page, "structure")).to_have_attribute("data-status", "fail")
    await expect(page.locator("#details")).to_be_hidden()
    # the same pasted on /verify, with the house's key typed in
    await page.goto(live_server.url("/verify"))
    await page.get_by_label("ou cole o JSON do registro").fill(json.dumps(nonsense(RECORDS[2])))
    await page.get_by_label("Chave pública da casa").fill(HOUSE.verify_key.encode().hex())
    await page.get_by_role("button", name="Verificar").click()
    await expect(verdict).to_have_attribute("data-state", "unreadable")
    await expect(verdict).not_to_contain_text("Verificado")


async def test_a_genuine_record_with_covered_false_added_is_unreadable_not_a_bad_signature(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await house_key(page, HOUSE)
    await serve_chain(page, TABLE, [ANCHOR, *RECORDS])
    record = next(r for r in RECORDS if any("card" in a for a in r["actions"]))
    index = next(i for i, a in enumerate(record["actions"]) if "card" in a)
    actions = [dict(a) for a in record["actions"]]
    actions[index]["covered"] = False  # not signed again: the house's signature stays
    await open_hand(page, live_server, record | {"actions": actions})
    verdict = page.locator("#verdict")
    await expect(verdict).to_have_attribute("data-state", "unreadable")
    await expect(verdict).to_contain_text(
        f'Registro ilegível: $.actions[{index}]: "covered": false não se escreve'
    )
    await expect(verdict).not_to_contain_text("assinatura")


# ------------------------------------------------------------------ the form's own refusals


async def test_a_refused_field_says_why_next_to_it(live_server: LiveServer,
                                                   browser: Browser) -> None:
    # an accessibility review: the refusal was said only in the verdict at the top, the field
    # neither marked nor linked, the focus left on the button
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verify"))
    text = page.get_by_label("ou cole o JSON do registro")
    key = page.get_by_label("Chave pública da casa")
    verify = page.get_by_role("button", name="Verificar")
    await verify.click()
    await expect(text).to_be_focused()
    await expect(text).to_have_attribute("aria-invalid", "true")
    await expect(text).to_have_accessible_description(
        "Cole o JSON de um registro ou escolha um arquivo.")
    await text.fill(json.dumps(VECTOR["record"]))
    await key.fill("zz")
    await verify.click()
    await expect(key).to_be_focused()
    await expect(key).to_have_attribute("aria-invalid", "true")
    await expect(key).to_have_accessible_description(
        "A chave pública são 64 dígitos hexadecimais minúsculos.")
    await expect(text).not_to_have_attribute("aria-invalid", "true")
    await expect(page.locator("#record-text-error")).to_be_hidden()
    await expect(page.locator("#verdict")).to_have_text(
        "A chave pública são 64 dígitos hexadecimais minúsculos.")
    # fixed: the refusal goes, and the record is checked
    await key.fill(KEY_HEX)
    await verify.click()
    await expect(key).not_to_have_attribute("aria-invalid", "true")
    await expect(page.locator("#pinned-key-error")).to_be_hidden()
    await expect(page.locator("#verdict")).not_to_have_attribute("data-state", "unreadable")


# ------------------------------------------------------------------ a lone surrogate


async def test_a_table_id_with_a_lone_surrogate_is_unreadable_as_the_cli_says(
    live_server: LiveServer, browser: Browser
) -> None:
    # the CLI: exit 2, `$.table: the table id is not valid Unicode text` (FAIRNESS.md 6); the
    # page said `Não foi possível conferir: texto com surrogate sem par`, as a failure
    record = VECTOR["record"]
    text = json.dumps(record).replace(json.dumps(record["table"]), '"mesa\\ud800"', 1)
    assert "\\ud800" in text
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verify"))
    await page.get_by_label("ou cole o JSON do registro").fill(text)
    await page.get_by_label("Chave pública da casa").fill(KEY_HEX)
    await page.get_by_role("button", name="Verificar").click()
    verdict = page.locator("#verdict")
    await expect(verdict).to_have_attribute("data-state", "unreadable")
    await expect(verdict).to_have_text(
        "Registro ilegível: $.table: o id da mesa não é um texto Unicode válido (tem um"
        " surrogate sem par)"
    )
    await expect(check(page, "structure")).to_have_attribute("data-status", "fail")
    # a surrogate pair is one character, and fine
    paired = json.dumps(record).replace(json.dumps(record["table"]), '"mesa\\ud83c\\udccf"', 1)
    got = await page.evaluate(
        """async (text) => {
             const f = await import("/static/js/fairness.js");
             const result = await f.verifyHandRecord(text);
             return [result.readable, result.checks.find((c) => c.name === "signature").status];
           }""",
        paired,
    )
    assert got == [True, "fail"]  # it reads; the signature was over the other table id


# ------------------------------------------------------------------ the offline commands


async def test_the_hand_page_recommends_the_tables_chain_command(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await house_key(page, HOUSE)
    await serve_chain(page, TABLE, [ANCHOR, *RECORDS])
    await open_hand(page, live_server, RECORDS[1])
    await expect(page.locator("#verdict")).to_have_attribute("data-state", "ok")
    chain = page.locator("#cli-chain-command")
    await expect(chain).to_have_text(
        f"barajamos-verify chain {live_server.base}/tables/{TABLE}/chain --key {public(HOUSE)}"
    )
    # the hand's own command stays, after it, saying what it does and does not check
    await expect(page.locator("#cli-command")).to_have_text(
        f"barajamos-verify hand {live_server.base}/hands/{TABLE}-2 --key {public(HOUSE)}"
    )
    assert await page.locator("#cli-chain-how + pre #cli-chain-command").count() == 1
    await expect(page.locator("#cli-chain-how")).to_contain_text(
        "Um registro sozinho não prova que a semente foi fixada antes da mão"
    )
    await expect(page.locator("#cli-hand-how")).to_contain_text(
        "dada num arquivo, ele avisa (WARN  seed-chain) que a cadeia de sementes não foi conferida"
    )
    # a pasted record of a table that is not this house's: its chain is a file, named for it
    await page.goto(live_server.url("/verify"))
    await page.get_by_label("ou cole o JSON do registro").fill(json.dumps(VECTOR["record"]))
    await page.get_by_label("Chave pública da casa").fill(KEY_HEX)
    await page.get_by_role("button", name="Verificar").click()
    assert VECTOR["record"]["table"] == "mesa-vector"
    await expect(chain).to_have_text(
        f"barajamos-verify chain mesa-vector-chain.json --key {KEY_HEX}"
    )
    # and without any key, the command says to pin the house's
    await house_key(page, None)
    await page.goto(live_server.url("/verify"))
    await page.get_by_label("ou cole o JSON do registro").fill(json.dumps(RECORDS[1]))
    await page.get_by_role("button", name="Verificar").click()
    await expect(chain).to_have_text(
        f"barajamos-verify chain {live_server.base}/tables/{TABLE}/chain"
        "   # sem --key: fixe a chave publicada pela casa"
    )


async def test_the_verifier_page_recommends_the_chain_command(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verificador"))
    await expect(page.locator("#verifier-chain-command")).to_have_text(
        "verificador/bin/python barajamos-verify.pyz chain https://CASA/tables/MESA/chain"
        " --key CHAVE"
    )
    await expect(page.locator("main")).to_contain_text(
        "só ela prova que a semente de cada mão foi fixada antes da mão"
    )
    await expect(page.locator("main")).to_contain_text(
        "dada num arquivo, ele avisa (WARN  seed-chain) que a cadeia de sementes não foi conferida"
    )


# ------------------------------------------------------------------ a key typed on /verify


async def paste(page: Page, live: LiveServer, record: dict[str, Any], key: str) -> None:
    await page.goto(live.url("/verify"))
    await page.get_by_label("ou cole o JSON do registro").fill(json.dumps(record))
    await page.get_by_label("Chave pública da casa").fill(key)
    await page.get_by_role("button", name="Verificar").click()


async def test_a_key_typed_on_verify_is_yours_and_the_house_key_is_named_as_such(
    live_server: LiveServer, browser: Browser
) -> None:
    # a genuine record signed by the key the house publishes (/api/key, the footer), checked
    # against another key typed in: it said "uma chave que a casa não publica" of the house's
    # own key, and called the typed key "a chave fixada da casa"
    page = await new_page(browser, live_server)
    await house_key(page, HOUSE)
    await serve_chain(page, TABLE, [ANCHOR, *RECORDS])
    verdict = page.locator("#verdict")
    house, typed = key_id(HOUSE), key_id(OTHER)
    await paste(page, live_server, RECORDS[1], public(OTHER))
    await expect(verdict).to_have_attribute("data-state", "fail")
    await expect(verdict).to_have_text(
        "FALHOU: chave, cadeia de sementes. Assinado por uma chave diferente da que você"
        f" digitou: a assinatura é da casa ({house} é a chave que a casa publica). A âncora da"
        " cadeia de sementes foi assinada por uma chave diferente da que você digitou: a"
        f" assinatura é da casa ({house} é a chave que a casa publica). O baralho e a"
        " distribuição saem da semente, mas a assinatura não é da chave que você digitou:"
        " confira a chave que a casa publica fora deste site (o campo vazio usa a chave"
        " publicada por este servidor)."
    )
    await expect(check(page, "key")).to_contain_text(
        f"assinado por {house}, não pela chave que você digitou ({typed}); {house} é a chave"
        " que a casa publica"
    )
    await expect(check(page, "seed-chain")).to_contain_text(
        f"essa âncora foi assinada por {house}, não pela chave que você digitou ({house} é a"
        " chave que a casa publica)"
    )
    await expect(page.locator("#checks")).not_to_contain_text("não publica")
    await expect(page.locator("#checks")).not_to_contain_text("chave fixada da casa")
    # the key typed is the house's: verified, and said so
    await paste(page, live_server, RECORDS[1], public(HOUSE))
    await expect(verdict).to_have_attribute("data-state", "ok")
    await expect(verdict).to_contain_text(
        "Assinado pela chave que você digitou, que é a chave que a casa publica."
    )
    await expect(check(page, "key")).to_have_text(re.compile(
        rf"assinado pela chave que você digitou, {house}, que é a chave que a casa publica$"
    ))
    # the signer is not the house's either (the house publishes a third key)
    await house_key(page, THIRD)
    await paste(page, live_server, RECORDS[1], public(OTHER))
    await expect(verdict).to_contain_text(
        f"FALHOU: chave, cadeia de sementes. Assinado por uma chave diferente da que você"
        f" digitou ({house}, que também não é a chave que a casa publica)."
    )
    # the house's key unknown (/api/key unavailable): only what is known
    await house_key(page, None)
    await paste(page, live_server, RECORDS[1], public(OTHER))
    await expect(verdict).to_contain_text(
        f"FALHOU: chave, cadeia de sementes. Assinado por uma chave diferente da que você"
        f" digitou ({house})."
    )
    await expect(check(page, "key")).to_have_text(re.compile(
        rf"assinado por {house}, não pela chave que você digitou \({typed}\)$"
    ))
    # the hand page (the house's keys, nothing typed) keeps its words
    await house_key(page, OTHER)
    await open_hand(page, live_server, RECORDS[1])
    await expect(verdict).to_contain_text("Assinado por uma chave que a casa não publica")


async def test_the_verifier_page_tells_every_status_and_exit_code(
    live_server: LiveServer, browser: Browser
) -> None:
    # it said "um item por linha (PASS ou FAILED)" and "0 ... 1 ...": the statuses are PASS,
    # FAIL, WARN and skip (FAILED heads a record), and unreadable input exits 2
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verificador"))
    output = page.locator("#verifier-output")
    for word in ("verified", "FAILED", "PASS", "FAIL", "WARN", "skip", "all checks passed",
                 "no check failed"):
        await expect(output.locator("code", has_text=re.compile(rf"^{word}$"))).to_have_count(1)
    await expect(output).not_to_contain_text("PASS ou FAILED")
    # its seats count from 0, the pages' from 1
    await expect(output).to_contain_text("o seat 0 é o lugar 1 das páginas da casa")
    await expect(page.locator("#verifier-exit")).to_have_text(re.compile(
        r"^O código de saída é 0 quando nada falhou \(pode haver avisos: leia-os\), 1\s+quando"
        r" alguma conferência falhou e 2 quando a entrada não pôde ser lida"
    ))
