"""What the 21st session's review of the table page found, fixed and kept fixed.

Most tables here are scripted: the real page, its WebSocket answered by the test with the
messages docs/PROTOCOL.md describes, in the order that showed each defect; the others are the
engine tables of tests/test_browser_table_player_review.py, or a live server's own.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Browser, WebSocketRoute, expect

from tests.test_browser_table_player_review import PlayerTable
from tests.test_browser_table_ux import paulista_1x1, paulista_2x2
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    LiveServer,
    browser_fixture,
    create_table,
    kept_js,
    live_server_fixture,
    new_page,
    signup,
)
from tests.test_browser_views import TABLE_ID, open_table
from tests.test_live_house_guards import until
from truco import view


def now_ms() -> int:
    return int(time.time() * 1000)


def table_json(me: str, *, status: str = "playing", other: dict[str, Any] | None = None,
               me_connected: bool = True, match: int = 1, kind: str = "training"
               ) -> dict[str, Any]:
    players = [
        {"seat": 0, "name": me, "bot": False, "connected": me_connected, "played_by": me,
         "cancel_at_ms": None},
        other or {"seat": 1, "name": "bot", "bot": True, "connected": True, "played_by": None,
                  "cancel_at_ms": None},
    ]
    return {"id": TABLE_ID, "variant": "paulista", "seats": 2, "mode": "vote", "kind": kind,
            "status": status, "owner": me, "players": players, "score": [0, 0], "match": match,
            "hand": 1 if match else 0, "you": 0, "rematch": [],
            "invite": "K7QX-92MD" if kind == "private" else None, "abandon_limit": 10,
            "forfeit_seat": None, "forfeit_trigger": None, "first_deal_by_ms": None}


def welcome(table: dict[str, Any], seq: int) -> str:
    return json.dumps({"type": "welcome", "table": table, "seat": 0, "seq": seq, "epoch": 1,
                       "server_time_ms": now_ms(), "signals": [],
                       "limits": {"max_message_bytes": 4096, "rate_per_second": 20}})


def snapshot(table: dict[str, Any], seq: int, hand: dict[str, Any] | None,
             view_: dict[str, Any] | None) -> str:
    return json.dumps({"type": "snapshot", "seq": seq, "epoch": 1, "server_time_ms": now_ms(),
                       "table": table, "hand": hand, "view": view_, "pending": [],
                       "absent": [], "automatic": [0, 0], "partner_signals": []})


def hand_info(hand: int, phase: str, entropy_from: list[int]) -> dict[str, Any]:
    """A snapshot's `hand` (HandInfo) of hand `hand`, committed to bytes of its own number."""
    return {"hand": hand, "phase": phase, "commitment": f"{hand:02x}" * 32, "chain_start": 1,
            "anchor": None, "entropy_from": entropy_from,
            "entropy_deadline_ms": now_ms() + 3000 if phase == "entropy" else None}


def commitment(hand: int, seq: int) -> str:
    return json.dumps({"type": "commitment", "seq": seq, "hand": hand,
                       "commitment": f"{hand:02x}" * 32, "chain_start": 1, "anchor": None,
                       "entropy_deadline_ms": now_ms() + 3000})


@dataclass
class Scripted:
    """A table's server, scripted: what each connection (in order) is sent at its `hello`."""

    on_hello: list[Callable[[], list[str]]]
    sent: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    routes: list[WebSocketRoute] = field(default_factory=list)
    drop_entropy_on: set[int] = field(default_factory=set)
    on_entropy: Callable[[WebSocketRoute, dict[str, Any]], None] | None = None

    def route(self, ws: WebSocketRoute) -> None:
        index = len(self.routes)
        self.routes.append(ws)
        ws.on_message(lambda text: self.on(ws, index, text))

    def on(self, ws: WebSocketRoute, index: int, text: str | bytes) -> None:
        message = json.loads(text)
        self.sent.append((index, message))
        if message["type"] == "hello":
            for out in self.on_hello[min(index, len(self.on_hello) - 1)]():
                ws.send(out)
        elif message["type"] == "entropy" and index in self.drop_entropy_on:
            asyncio.get_running_loop().create_task(ws.close(code=4000, reason="lost"))
        elif message["type"] == "entropy" and self.on_entropy is not None:
            self.on_entropy(ws, message)


# --- 1. a `back` lost with its socket ----------------------------------------------------------


@dataclass
class LossyBack(PlayerTable):
    backs: int = 0

    def on_message(self, ws: WebSocketRoute, text: str | bytes) -> None:
        if json.loads(text)["type"] == "back":
            self.backs += 1
            if self.backs == 1:  # the first is lost with its socket
                asyncio.get_running_loop().create_task(ws.close(code=4000, reason="lost"))
                return
        super().on_message(ws, text)


async def test_a_back_lost_with_its_socket_can_be_sent_again(
    live_server: LiveServer, browser: Browser
) -> None:
    # the button stayed disabled for good (its message waited for an answer that could not come):
    # the player, absent, moved automatically every 2 s towards a forfeit
    table = LossyBack(paulista_1x1(), seat=0, names=["volta_perdida", "bot"], absent=[0],
                      automatic=[1, 0])
    page = await open_table(live_server, browser, table, "volta_perdida")
    back = page.get_by_role("button", name="Estou de volta")
    await back.click()
    status = page.locator("#conn-status")
    await expect(status).not_to_have_attribute("data-state", "connected")
    await expect(status).to_have_attribute("data-state", "connected")
    await expect(back).to_be_visible()  # still absent: the first never arrived
    await expect(back).to_have_attribute("aria-disabled", "false")
    await back.click()
    await expect(back).to_be_hidden()
    assert table.backs == 2


# --- 2. two tabs of my seat --------------------------------------------------------------------


async def test_two_tabs_keep_the_contribution_the_server_took(
    live_server: LiveServer, browser: Browser
) -> None:
    # both tabs made and sent their own; the server took the first and refused the other as a
    # duplicate, which, stored last, made the page's own check of the record fail an honest hand
    me = "duas_abas"
    playing = table_json(me)

    def hello() -> list[str]:
        hand = hand_info(1, "playing", [0])
        return [welcome(playing, 1), snapshot(playing, 1, hand, view(paulista_1x1(), 0))]

    taken: list[str] = []

    def answer(ws: WebSocketRoute, message: dict[str, Any]) -> None:
        if taken:
            ws.send(json.dumps({"type": "error", "id": message["id"],
                                "error": "entropy_duplicate", "message": "already"}))
            return
        taken.append(message["hex"])
        for route in server.routes:
            route.send(json.dumps({"type": "entropy", "seq": 3, "hand": 2, "seat": 0}))
        ws.send(json.dumps({"type": "ack", "id": message["id"], "seq": 3}))

    server = Scripted([hello], on_entropy=answer)
    page = await new_page(browser, live_server)
    await signup(page, live_server, me)
    await page.context.route_web_socket("**/ws/tables/**", server.route)
    other = await page.context.new_page()
    await page.goto(live_server.url(f"/t/{TABLE_ID}"))
    await other.goto(live_server.url(f"/t/{TABLE_ID}"))
    for tab in (page, other):
        await expect(tab.locator("#conn-status")).to_have_attribute("data-state", "connected")
    for ws in server.routes:
        ws.send(commitment(2, 2))
    await until(lambda: len([m for _, m in server.sent if m["type"] == "entropy"]) == 2,
                seconds=5)
    # both answers taken in: a later numbered event on each socket shows in each tab
    for ws in server.routes:
        ws.send(json.dumps({"type": "absent", "seq": 4, "seat": 1, "absent": True,
                            "automatic": 1}))
    for tab in (page, other):
        await expect(tab.locator('#players li[data-seat="1"]')).to_contain_text("ausente")
    stored = [await tab.evaluate(
        kept_js("id", "return localStorage.getItem(kept(`mine:${id}-2`))"), TABLE_ID)
        for tab in (page, other)]
    assert taken and stored == [taken[0], taken[0]]


# --- 3. entropy lost, and a catch-up that goes on to the next hand -----------------------------


async def test_entropy_lost_before_a_replay_past_its_hand_is_late(
    live_server: LiveServer, browser: Browser
) -> None:
    # the replay dealt hand 1 without mine and went on to hand 2's commitment: the page, still
    # catching up, looked at hand 2 only, and hand 1 stayed "sent" (its record check then
    # failed "mine" instead of saying it did not arrive in time)
    me = "entropia_perdida"
    playing = table_json(me)

    def first() -> list[str]:
        return [welcome(playing, 1), snapshot(playing, 1, hand_info(1, "entropy", []), None)]

    def second() -> list[str]:
        return [
            welcome(playing, 3),
            json.dumps({"type": "update", "seq": 2, "hand": 1, "events": [],
                        "view": view(paulista_1x1(), 0), "pending": [], "absent": []}),
            commitment(2, 3),
        ]

    server = Scripted([first, second], drop_entropy_on={0})
    page = await new_page(browser, live_server)
    await signup(page, live_server, me)
    await page.route_web_socket("**/ws/tables/**", server.route)
    await page.goto(live_server.url(f"/t/{TABLE_ID}"))
    for _ in range(50):
        if any(i == 1 and m["type"] == "entropy" for i, m in server.sent):
            break
        await page.wait_for_timeout(100)
    states = await page.evaluate(
        kept_js("id", "return [1, 2].map((h) =>"
                " localStorage.getItem(kept(`mine-state:${id}-${h}`)))"),
        TABLE_ID)
    assert states == ["late", "sent"]


# --- 4. a private table without its invite ------------------------------------------------------


async def test_a_private_table_without_its_invite_is_explained_in_portuguese(
    live_server: LiveServer, browser: Browser
) -> None:
    owner = await new_page(browser, live_server)
    await signup(owner, live_server, "dono_priv")
    table_id = await create_table(owner, "paulista", 2, "private")
    guest = await new_page(browser, live_server)
    await signup(guest, live_server, "visita_priv")
    await guest.goto(live_server.url(f"/t/{table_id}"))
    error = guest.locator("#table-error")
    await expect(error).to_contain_text("Esta mesa é privada: abra-a pelo link de convite")


# --- 5. a reconnect's replay ----------------------------------------------------------------------


async def test_a_replay_does_not_log_seats_changing_back_and_forth(
    live_server: LiveServer, browser: Browser
) -> None:
    # caio sat down while my connection was down: the welcome's table (newer) was taken first,
    # and each replayed `table` event compared with it: "caio left", "caio sat down"
    me = "dono_aberta"
    free = {"seat": 1, "name": None, "bot": False, "connected": False, "played_by": None,
            "cancel_at_ms": None}
    caio = {"seat": 1, "name": "caio", "bot": False, "connected": True, "played_by": None,
            "cancel_at_ms": None}
    opened = table_json(me, status="open", other=free, match=0, kind="private")

    def first() -> list[str]:
        return [welcome(opened, 1), snapshot(opened, 1, None, None)]

    def second() -> list[str]:
        final = table_json(me, status="open", other=caio, match=0, kind="private")
        away = table_json(me, status="open", other=free, match=0, kind="private",
                          me_connected=False)
        sat = table_json(me, status="open", other=caio, match=0, kind="private",
                         me_connected=False)
        return [welcome(final, 4), *(
            json.dumps({"type": "table", "seq": seq, "table": {**t, "you": None, "invite": None}})
            for seq, t in ((2, away), (3, sat), (4, final)))]

    server = Scripted([first, second])
    page = await new_page(browser, live_server)
    await signup(page, live_server, me)
    await page.route_web_socket("**/ws/tables/**", server.route)
    await page.goto(live_server.url(f"/t/{TABLE_ID}"))
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await server.routes[0].close(code=4000, reason="blip")
    await expect(page.locator("#seat-list")).to_contain_text("caio")
    # everything the reconnect was sent is taken in: a later numbered event of its socket shows
    server.routes[1].send(json.dumps({"type": "absent", "seq": 5, "seat": 0, "absent": True,
                                      "automatic": 1}))
    await expect(page.get_by_role("button", name="Estou de volta")).to_be_visible()
    lines = await page.locator("#log li").all_text_contents()
    said = [line for line in lines if "caio" in line]
    assert len(said) == 1 and "caio sentou no lugar 2" in said[0], lines


# --- 6. a signal double-clicked ----------------------------------------------------------------


async def test_a_double_clicked_signal_is_sent_once(
    live_server: LiveServer, browser: Browser
) -> None:
    table = PlayerTable(paulista_2x2(), seat=0, names=["sinal_duplo", "b1", "par_duplo", "b3"],
                        people={2}, signals=[{"code": "tres", "label": "Tenho três"}])
    page = await open_table(live_server, browser, table, "sinal_duplo")
    await page.get_by_role("button", name="Tenho três").dblclick()
    # the first signal's answer is shown, and a second send would have gone before it
    await expect(page.locator("#signal-sent")).to_have_text(
        "Sinal enviado ao parceiro: “Tenho três”.")
    await page.wait_for_timeout(500)
    assert table.sent_signals == ["tres"]


# --- 7. the browser's own verifier agrees with the CLI -------------------------------------------


async def _fairness(page: Any, script: str, *args: Any) -> Any:
    """Run `script` (the body of an async function of `f`, fairness.js, and `c`, common.js, and
    `args`) in the page."""
    return await page.evaluate(
        "async (args) => { const f = await import('/static/js/fairness.js');"
        f" const c = await import('/static/js/common.js'); {script} }}", list(args))


async def test_the_browsers_seed_chain_check_agrees_with_the_cli(
    live_server: LiveServer, browser: Browser
) -> None:
    # a review compared the page's verdicts with barajamos-verify's on the same inputs
    from tests.test_verifier_player_review import KEY_HEX, _reanchored_chain
    from verifier.check import CheckName, Status, check_chain

    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verificador"))
    check = "return await f.seedChainCheck(args[0], args[1], [args[2]]);"
    # (1) a new chain right after a short one: the CLI warns; the page said "Verificado"
    entries = _reanchored_chain(first_length=5)
    record = entries[-1]
    verdict = await _fairness(page, check, record, entries, KEY_HEX)
    assert verdict["status"] == "warn"
    assert "logo depois de uma de só 5 sementes" in verdict["detail"]
    report = check_chain(entries, pinned=[bytes.fromhex(KEY_HEX)])
    assert any(c.status is Status.WARN for e in report.entries for c in e.checks
               if c.name is CheckName.SEED_CHAIN)
    # (3) a bad copy of the record's anchor beside the good one: the page failed a valid record
    long_entries = _reanchored_chain(first_length=10)
    forged = {**long_entries[-2], "signature": "00" * 64}
    verdict = await _fairness(page, check, long_entries[-1], [forged, *long_entries], KEY_HEX)
    assert verdict["status"] != "fail", verdict
    # (2) a seed anchor that is not a valid statement: the CLI warns (not checked); the page
    # passed
    odd = {**long_entries[0], "extra": 1}
    verdict = await _fairness(page, check, long_entries[-1], [odd, *long_entries], KEY_HEX)
    assert verdict["status"] == "warn" and "não é uma declaração válida" in verdict["detail"]


async def test_the_browsers_record_check_quotes_briefly_and_reads_mine_in_any_case(
    live_server: LiveServer, browser: Browser
) -> None:
    from verifier.samples import sample_table

    sample = sample_table(table_id="mesa-js", config=view_config(), hands=3, seed=2,
                          absent_rate=0.0)
    record = sample.records[0]
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verificador"))
    # (6) a 200,000-character field name was quoted whole in the verdict
    hostile = json.dumps({**record, "x" * 200_000: 1})
    error = await _fairness(page, "return (await f.verifyHandRecord(args[0])).error;", hostile)
    assert "desconhecido" in error and len(error) <= 301
    # (8) my contribution typed in uppercase hex was "not in the record"
    mine = record["contributions"][0].upper()
    status = await _fairness(
        page, "return (await f.verifyHandRecord(args[0], {mine: args[1]}))"
        ".checks.find((c) => c.name === 'mine').status;", record, mine)
    assert status == "pass"
    # (4) a contribution that arrived late, with no seat kept by this browser (I left before the
    # record came out): a warning when the record has a seat without one, as with the seat
    late = {**record, "contributions": [None, *record["contributions"][1:]]}
    explained = await _fairness(
        page, "const r = await f.verifyHandRecord(args[0], {mine: args[1]});"
        " return c.explainLateContribution(r, 'late', null).find((x) => x.name === 'mine');",
        late, "ab" * 32)
    assert explained["status"] == "warn" and "não chegou a tempo" in explained["detail"]


def view_config() -> Any:
    from truco import MatchConfig, TeamMode, Variant

    return MatchConfig(Variant.PAULISTA, 2, TeamMode.VOTE)


async def test_the_hand_page_reads_a_record_as_the_cli_does(
    live_server: LiveServer, browser: Browser
) -> None:
    # a review: a record with a byte-order mark, with bytes that are not UTF-8, or over 1 MiB
    # was verified in the browser (its text() drops a BOM and replaces bad bytes); the CLI
    # refuses all three as unreadable (FAIRNESS.md 6 and 9)
    from playwright.async_api import Route

    from tests.test_browser_hand_source import RECORDS, TABLE, pin_the_test_key

    good = json.dumps(RECORDS[0]).encode()
    bodies = {"bom": b"\xef\xbb\xbf" + good, "bytes": good[:-1] + b' "\xff"}',
              "big": good + b" " * (1 << 20)}
    page = await new_page(browser, live_server)
    await pin_the_test_key(page)
    def serving(body: bytes) -> Callable[[Route], Any]:
        async def fulfil(route: Route) -> None:
            await route.fulfill(status=200, content_type="application/json", body=body)

        return fulfil

    for name, body in bodies.items():
        await page.route(re.compile(rf"/hands/{TABLE}-1$"), serving(body))
        await page.goto(live_server.url(f"/h/{TABLE}/1"))
        verdict = page.locator("#verdict")
        await expect(verdict).to_have_attribute("data-state", "unreadable")
        said = {"bom": "marca de ordem de bytes", "bytes": "não é texto UTF-8 válido",
                "big": "limite de 1 MiB"}[name]
        await expect(verdict).to_contain_text(said)
        await page.unroute(re.compile(rf"/hands/{TABLE}-1$"))
    # the plain record reads and verifies
    await page.route(re.compile(rf"/hands/{TABLE}-1$"), serving(good))
    await page.goto(live_server.url(f"/h/{TABLE}/1"))
    # (its verdict starts "pending": not unreadable says nothing until it has one; the chain is
    # not served here, so a good record's is ok or warn)
    await expect(page.locator("#verdict")).to_have_attribute(
        "data-state", re.compile(r"^(ok|warn)$"))


async def test_the_browsers_signature_check_refuses_small_order_keys_as_pynacl_does(
    live_server: LiveServer, browser: Browser
) -> None:
    # a review: the identity key, with R the identity and S = 0, "signs" every message for
    # WebCrypto; libsodium (the CLI's PyNaCl) refuses it, and so must the page
    import nacl.exceptions
    import nacl.signing
    import pytest

    identity = "01" + "00" * 31
    forged = identity + "00" * 32
    with pytest.raises((nacl.exceptions.BadSignatureError, ValueError)):
        nacl.signing.VerifyKey(bytes.fromhex(identity)).verify(b"any", bytes.fromhex(forged))
    # RFC 8032, test 1: a genuine key, signature and (empty) message
    rfc_key = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    rfc_sig = ("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33b"
               "acc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b")
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verificador"))
    verdicts = await _fairness(
        page, "const h = f.hexToBytes; const m = new TextEncoder().encode('any');"
        " return [await f.ed25519Verify(h(args[0]), h(args[1]), m),"
        " await f.ed25519Verify(h(args[2]), h(args[3]), new Uint8Array(0))];",
        identity, forged, rfc_key, rfc_sig)
    assert verdicts == [False, True]


async def test_the_browsers_seed_chain_check_refuses_an_anchor_with_a_bad_signature(
    live_server: LiveServer, browser: Browser
) -> None:
    # a mutation audit: an anchor carrying the house's key but a signature that does not verify
    # counted as the house's
    from verifier.samples import sample_table

    sample = sample_table(table_id="mesa-js", config=view_config(), hands=1, seed=2)
    anchor = sample.anchor_statement
    flipped = f"{int(anchor['signature'][:2], 16) ^ 1:02x}{anchor['signature'][2:]}"
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verificador"))
    check = "return await f.seedChainCheck(args[0], args[1], [args[2]]);"
    # the genuine anchor: the seed reaches it
    verdict = await _fairness(page, check, sample.records[0], [anchor], anchor["public_key"])
    assert verdict["status"] == "pass", verdict
    verdict = await _fairness(page, check, sample.records[0],
                              [{**anchor, "signature": flipped}], anchor["public_key"])
    assert verdict["status"] == "fail", verdict
    assert "tem uma assinatura que não confere" in verdict["detail"]


async def test_the_browsers_signature_check_refuses_a_small_order_r_as_pynacl_does(
    live_server: LiveServer, browser: Browser
) -> None:
    # a mutation audit: a signature whose R is the identity, S = k·a, verifies for WebCrypto (S·B
    # = R + k·A) by the key's own holder for any message; libsodium refuses it, so must the page
    import hashlib

    import nacl.exceptions
    import nacl.signing
    import pytest

    from verifier.samples import TEST_KEY_SEED

    order = 2**252 + 27742317777372353535851937790883648493  # L, the group's order
    digest = hashlib.sha512(TEST_KEY_SEED).digest()
    a = (int.from_bytes(digest[:32], "little") & ((1 << 254) - 8)) | (1 << 254)
    public = bytes(nacl.signing.SigningKey(TEST_KEY_SEED).verify_key)
    message = b"any"
    identity = bytes.fromhex("01" + "00" * 31)
    k = int.from_bytes(hashlib.sha512(identity + public + message).digest(), "little") % order
    forged = identity + (k * a % order).to_bytes(32, "little")
    with pytest.raises((nacl.exceptions.BadSignatureError, ValueError)):
        nacl.signing.VerifyKey(public).verify(message, forged)
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verificador"))
    verdict = await _fairness(
        page, "const h = f.hexToBytes;"
        " return await f.ed25519Verify(h(args[0]), h(args[1]), new TextEncoder().encode('any'));",
        public.hex(), forged.hex())
    assert verdict is False


async def test_entropy_is_sent_once_for_a_hand_until_it_is_answered(
    live_server: LiveServer, browser: Browser
) -> None:
    # a mutation audit: a snapshot, or the same hand committed again (a server restart), before
    # the answer to my entropy sent it again
    me = "entropia_uma_vez"
    playing = table_json(me)

    def hello() -> list[str]:
        return [welcome(playing, 1), snapshot(playing, 1, hand_info(1, "entropy", []), None)]

    server = Scripted([hello])  # my entropy is never answered
    page = await new_page(browser, live_server)
    await signup(page, live_server, me)
    await page.route_web_socket("**/ws/tables/**", server.route)
    await page.goto(live_server.url(f"/t/{TABLE_ID}"))
    await until(lambda: any(m["type"] == "entropy" for _, m in server.sent), seconds=5)
    [ws] = server.routes
    ws.send(snapshot(playing, 1, hand_info(1, "entropy", []), None))
    ws.send(commitment(1, 2))
    # both taken in: a later numbered event shows
    ws.send(json.dumps({"type": "absent", "seq": 3, "seat": 0, "absent": True, "automatic": 1}))
    await expect(page.get_by_role("button", name="Estou de volta")).to_be_visible()
    entropy = [m for _, m in server.sent if m["type"] == "entropy"]
    assert [m["hand"] for m in entropy] == [1], entropy
