"""The browser's fairness verifier (server/static/js/fairness.js) in a real Chromium.

The JavaScript is an independent implementation of docs/FAIRNESS.md; here it must reproduce every
shipped known-answer vector (verifier/vectors/*.json) byte for byte, agree with the Python
reference on fresh random inputs, and turn a tampered record into a named failure.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from playwright.async_api import Browser, Page, expect

# the harness (real server, Chromium) lives with the table tests; its fixtures are shared here
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    LiveServer,
    browser_fixture,
    live_server_fixture,
    new_page,
)
from truco.fairness import canonical_json
from verifier.check import CheckName, check_hand
from verifier.signing import sign_built_record, signing_key_from_seed
from verifier.vectors_run import derive_case, load_vectors

FAIRNESS_JS = "/static/js/fairness.js"

# Runs in the page: every deck vector through the JS, returning what it computed.
_DERIVE_JS = """
async (cases) => {
  const f = await import("/static/js/fairness.js");
  const hex = (b) => f.bytesToHex(b);
  const out = [];
  for (const c of cases) {
    const seed = f.hexToBytes(c.seed);
    const contributions = c.contributions.map((x) => (x === null ? null : f.hexToBytes(x)));
    const trace = await f.shuffleTrace(seed, c.table, c.hand, contributions);
    const firstDealer = await f.drawFirstDealer(seed, c.table, contributions);
    const dealer = c.dealer === null ? firstDealer : c.dealer;
    const deal = f.dealCards(trace.deck, c.variant, contributions.length, dealer);
    const message = f.deckMessage(c.table, c.hand, contributions);
    const block = new Uint8Array([...message, 0, 0, 0, 0]);
    out.push({
      commitment: hex(await f.sha256(seed)),
      deck_message: hex(message),
      first_dealer_message: hex(f.firstDealerMessage(c.table, contributions)),
      deck_stream_block_0: hex(await f.hmacSha256(seed, block)),
      deck: trace.deck,
      bytes_read: trace.bytesRead,
      rejections: trace.rejected,
      first_dealer: firstDealer,
      dealer,
      hands: deal.hands,
      vira: deal.vira,
    });
  }
  return out;
}
"""

_CANONICAL_JS = """
async (cases) => {
  const f = await import("/static/js/fairness.js");
  const out = [];
  for (const c of cases) {
    const bytes = f.canonicalJSON(c.value);
    const sha256 = f.bytesToHex(await f.sha256(bytes));
    out.push({ canonical: new TextDecoder().decode(bytes), sha256 });
  }
  return out;
}
"""

_RECORDS_JS = """
async ({ records, key }) => {
  const f = await import("/static/js/fairness.js");
  const out = [];
  for (const record of records) {
    const text = JSON.stringify(record, null, 1);  // whitespace is allowed in a file
    const result = await f.verifyHandRecord(text, { pinnedKey: key });
    out.push({
      readable: result.readable,
      error: result.error,
      checks: result.checks.map((c) => [c.name, c.status, c.detail]),
      hash: await f.recordHash(record),
      signed_sha256: f.bytesToHex(await f.sha256(f.signedBytes(record))),
    });
  }
  return out;
}
"""


def _statuses(result: dict[str, Any]) -> dict[str, str]:
    return {name: status for name, status, _ in result["checks"]}


# a browser without Ed25519 in WebCrypto, as older ones are (an init script)
NO_ED25519 = """
  const importKey = crypto.subtle.importKey.bind(crypto.subtle);
  crypto.subtle.importKey = (format, key, algorithm, ...rest) => {
    const name = typeof algorithm === "string" ? algorithm : algorithm.name;
    if (name === "Ed25519") {
      return Promise.reject(new DOMException("no Ed25519 here", "NotSupportedError"));
    }
    return importKey(format, key, algorithm, ...rest);
  };
"""


async def test_js_reproduces_every_deck_vector(live_server: LiveServer, browser: Browser) -> None:
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verify"))
    cases = load_vectors("decks.json")["cases"]
    got = await page.evaluate(_DERIVE_JS, cases)
    assert len(got) == len(cases)
    for case, result in zip(cases, got, strict=True):
        assert result == case["expect"], case["name"]


async def test_js_reproduces_every_canonical_json_vector(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verify"))
    cases = load_vectors("canonical.json")["cases"]
    got = await page.evaluate(_CANONICAL_JS, cases)
    for case, result in zip(cases, got, strict=True):
        assert result == {"canonical": case["canonical"], "sha256": case["sha256"]}, case["name"]


async def test_js_verifies_the_signed_hand_and_chain_vectors(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verify"))
    hand = load_vectors("hand.json")
    chain = load_vectors("chain.json")
    chain_hands = [entry for entry in chain["entries"] if entry["kind"] == "hand"]
    records = [hand["record"], *chain_hands]
    got = await page.evaluate(_RECORDS_JS, {"records": records, "key": hand["public_key"]})
    expected = ["structure", "key", "signature", "commitment", "deck", "deal"]
    key = bytes.fromhex(hand["public_key"])
    for record, result in zip(records, got, strict=True):
        assert result["readable"], result["error"]
        statuses = _statuses(result)
        # Chromium has Ed25519 in WebCrypto: the signature is really checked here, not skipped
        assert {name: statuses[name] for name in expected} == dict.fromkeys(expected, "pass")
        assert statuses["replay"] == "skip"  # the rules replay is the CLI's
        # a drawn dealer is checked here; a rotation one needs the previous hand: the CLI's
        # chain check, so both skip it on a lone record
        cli = check_hand(record, pinned=[key]).entries[0].check(CheckName.DEALER).status.value
        assert statuses["dealer"] == cli == ("pass" if record["dealer"]["by"] == "draw" else "skip")
    assert {r["dealer"]["by"] for r in records} == {"draw", "rotation"}
    assert got[0]["hash"] == hand["record_hash"]
    assert got[0]["signed_sha256"] == hand["signed_bytes_sha256"]
    assert [r["hash"] for r in got[1:]] == chain["record_hashes"]
    # each record of the chain names the previous one's hash (genesis first)
    assert [h["prev"] for h in chain_hands] == ["0" * 64, *chain["record_hashes"][:-1]]


async def test_a_hand_one_record_with_a_rotation_dealer_fails_as_in_the_cli(
    live_server: LiveServer, browser: Browser
) -> None:
    # FAIRNESS.md 9, check 6: hand 1 of a table always draws its dealer. A record claiming a
    # rotation dealer there, properly signed by the house, must fail, not pass unchecked
    hand = load_vectors("hand.json")
    unsigned = {
        k: v for k, v in hand["record"].items() if k not in ("key_id", "public_key", "signature")
    }
    assert unsigned["hand"] == 1 and unsigned["dealer"]["by"] == "draw"
    unsigned["dealer"] = {"by": "rotation", "seat": unsigned["dealer"]["seat"]}
    key = signing_key_from_seed(bytes.fromhex(hand["test_key_seed"]))
    forged = sign_built_record(unsigned, key)
    assert forged["public_key"] == hand["public_key"]
    cli = check_hand(forged, pinned=[bytes.fromhex(hand["public_key"])]).entries[0]
    assert cli.check(CheckName.DEALER).status.value == "fail"

    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verify"))
    [result] = await page.evaluate(_RECORDS_JS, {"records": [forged], "key": hand["public_key"]})
    assert result["readable"], result["error"]
    statuses = _statuses(result)
    assert statuses["dealer"] == "fail"
    detail = next(d for name, _, d in result["checks"] if name == "dealer")
    assert "mão 1" in detail and "sorteado" in detail
    # everything else of it is sound: only the dealer is wrong
    for name in ("key", "signature", "commitment", "deck", "deal"):
        assert statuses[name] == "pass", name

    # and the page says FALHOU, naming the dealer check
    await page.get_by_label("ou cole o JSON do registro").fill(json.dumps(forged))
    await page.get_by_label("Chave pública da casa").fill(hand["public_key"])
    await page.get_by_role("button", name="Verificar").click()
    await expect(page.locator("#verdict")).to_have_attribute("data-state", "fail")
    await expect(page.locator("#verdict")).to_contain_text("quem dá")
    # the verdict, above the form, is where the focus goes (and the page with it)
    await expect(page.locator("#verdict-title")).to_be_focused()
    await expect(page.locator("#verdict")).to_be_in_viewport()
    await expect(page.locator('#checks [data-check="dealer"]')).to_have_attribute(
        "data-status", "fail"
    )


async def test_js_agrees_with_python_on_random_inputs(
    live_server: LiveServer, browser: Browser
) -> None:
    rng = random.Random(20261130)
    cases: list[dict[str, Any]] = []
    for index in range(40):
        seats = rng.choice((2, 4))
        contributions: list[str | None] = []
        for _ in range(seats):
            kind = rng.random()
            if kind < 0.25:
                contributions.append(None)
            else:
                size = rng.choice((1, 7, 32, 255, 256))
                contributions.append(rng.randbytes(size).hex())
        cases.append({
            "seed": rng.randbytes(32).hex(),
            "table": rng.choice(("a", "mesa ñ ☕", "3f9c0a1b2c3d4e5f", "x" * 128)) + str(index)[:0],
            "hand": rng.choice((1, 2, 77, 2**31, 2**32 - 1)),
            "variant": rng.choice(("paulista", "mineiro", "argentino")),
            "contributions": contributions,
            "dealer": rng.choice((None, 0, seats - 1)),
        })
    values: list[Any] = [
        {"z": 1, "a": [True, None, -5], "é": "not a key: non-ASCII keys are refused"},
        {"s": "\u0000\u001f\u007f\u2028\U0001f0a1 \"quoted\" \\ /"},
        {"n": 2**53 - 1, "m": -(2**53 - 1), "nested": {"b": {}, "a": []}},
    ]
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verify"))
    got = await page.evaluate(_DERIVE_JS, cases)
    for case, result in zip(cases, got, strict=True):
        assert result == derive_case(case), case
    js_canonical = await page.evaluate(_CANONICAL_JS, [{"value": v} for v in values[1:]])
    for value, result in zip(values[1:], js_canonical, strict=True):
        expected = canonical_json(value)
        assert result == {
            "canonical": expected.decode(),
            "sha256": hashlib.sha256(expected).hexdigest(),
        }
    refused = await page.evaluate(
        """async (value) => {
          const f = await import("/static/js/fairness.js");
          try { f.canonicalJSON(value); return null; } catch (err) { return err.message; }
        }""",
        values[0],
    )
    assert refused is not None and "não é ASCII" in refused


async def test_js_reader_refuses_what_the_spec_calls_unreadable(
    live_server: LiveServer, browser: Browser
) -> None:
    record = load_vectors("hand.json")["record"]
    text = json.dumps(record)
    bad_inputs = {
        "duplicate key": text.replace('{"actions"', '{"hand": 1, "actions"', 1),
        "float": text.replace(f'"hand": {record["hand"]}', f'"hand": {record["hand"]}.0', 1),
        "exponent": text.replace(f'"hand": {record["hand"]}', f'"hand": {record["hand"]}e0', 1),
        "truncated": text[:-10],
        "unknown version": text.replace("barajamos-shuffle/v1", "barajamos-shuffle/v2"),
        "uppercase hex": text.replace(record["seed"], record["seed"].upper()),
        "extra field": text[:-1] + ', "extra": 1}',
        "not an object": "[1, 2, 3]",
    }
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verify"))
    got = await page.evaluate(
        """async (inputs) => {
          const f = await import("/static/js/fairness.js");
          const out = {};
          for (const [name, text] of Object.entries(inputs)) {
            const result = await f.verifyHandRecord(text, {});
            out[name] = [result.readable, result.error];
          }
          return out;
        }""",
        bad_inputs,
    )
    for name, (readable, error) in got.items():
        assert readable is False, name
        assert error, name
    assert "chave duplicada" in got["duplicate key"][1]
    assert "só números inteiros" in got["float"][1]
    assert "versão desconhecida" in got["unknown version"][1]
    assert "campo(s) desconhecido(s): extra" in got["extra field"][1]


async def test_without_ed25519_in_webcrypto_the_signature_is_left_to_the_cli(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await page.add_init_script(NO_ED25519)
    await page.goto(live_server.url("/verify"))
    hand = load_vectors("hand.json")
    await page.get_by_label("ou cole o JSON do registro").fill(json.dumps(hand["record"]))
    await page.get_by_label("Chave pública da casa").fill(hand["public_key"])
    await page.get_by_role("button", name="Verificar").click()
    signature = page.locator('#checks [data-check="signature"]')
    await expect(signature).to_have_attribute("data-status", "skip")
    await expect(signature).to_contain_text("conferida pela linha de comando")
    # the deck and the deal are still rebuilt and checked here; a pasted record of a table that
    # is not this house's has no seed chain to check here, so the headline is no "Verificado"
    await expect(page.locator("#verdict")).to_have_attribute("data-state", "warn")
    await expect(page.locator("#verdict")).to_contain_text("Não verificado por completo")
    await expect(page.locator('#checks [data-check="seed-chain"]')).to_have_attribute(
        "data-status", "skip"
    )
    for name in ("key", "commitment", "deck", "dealer", "deal"):
        await expect(page.locator(f'#checks [data-check="{name}"]')).to_have_attribute(
            "data-status", "pass"
        )


def _resigned(**changes: Any) -> dict[str, Any]:
    """The hand vector's record with `changes`, signed again by its (test) key: only the change
    is wrong with it."""
    hand = load_vectors("hand.json")
    unsigned = {
        k: v for k, v in hand["record"].items() if k not in ("key_id", "public_key", "signature")
    }
    key = signing_key_from_seed(bytes.fromhex(hand["test_key_seed"]))
    return sign_built_record({**unsigned, **changes}, key)


async def _checked(
    live_server: LiveServer, browser: Browser, record: dict[str, Any]
) -> tuple[Page, dict[str, str]]:
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verify"))
    key = load_vectors("hand.json")["public_key"]
    [result] = await page.evaluate(_RECORDS_JS, {"records": [record], "key": key})
    assert result["readable"], result["error"]
    return page, _statuses(result)


async def test_a_commitment_that_is_not_the_seeds_hash_fails(
    live_server: LiveServer, browser: Browser
) -> None:
    # a mutation audit: a commitment of the right length but not SHA-256(seed) passed
    forged = _resigned(commitment="00" * 32)
    page, statuses = await _checked(live_server, browser, forged)
    assert statuses["commitment"] == "fail"
    assert statuses["signature"] == statuses["deck"] == statuses["deal"] == "pass"
    await page.get_by_label("ou cole o JSON do registro").fill(json.dumps(forged))
    await page.get_by_label("Chave pública da casa").fill(load_vectors("hand.json")["public_key"])
    await page.get_by_role("button", name="Verificar").click()
    await expect(page.locator("#verdict")).to_have_attribute("data-state", "fail")
    await expect(page.locator('#checks [data-check="commitment"]')).to_have_attribute(
        "data-status", "fail")


async def test_a_deal_with_cards_swapped_between_seats_fails(
    live_server: LiveServer, browser: Browser
) -> None:
    # a mutation audit: the deal check compared only the vira, not the seats' cards
    hands = [list(cards) for cards in load_vectors("hand.json")["record"]["deal"]["hands"]]
    hands[0][0], hands[1][0] = hands[1][0], hands[0][0]
    vira = load_vectors("hand.json")["record"]["deal"]["vira"]
    _, statuses = await _checked(live_server, browser,
                                 _resigned(deal={"hands": hands, "vira": vira}))
    assert statuses["deal"] == "fail"
    assert statuses["signature"] == statuses["deck"] == statuses["dealer"] == "pass"


async def test_a_drawn_dealer_that_is_not_the_draws_fails(
    live_server: LiveServer, browser: Browser
) -> None:
    # a mutation audit: the first hand's dealer, drawn from the seed, was never compared
    record = load_vectors("hand.json")["record"]
    assert record["dealer"]["by"] == "draw"
    seat = (record["dealer"]["seat"] + 1) % record["seats"]
    _, statuses = await _checked(live_server, browser,
                                 _resigned(dealer={"by": "draw", "seat": seat}))
    assert statuses["dealer"] == "fail"
    assert statuses["signature"] == statuses["deck"] == "pass"
