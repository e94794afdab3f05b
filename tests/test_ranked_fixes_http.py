"""The review's findings fixed in `http.py`, `review.py` and `penalties.py` (with the ranked
service's side in tests/test_ranked_fixes.py): typed seat counts in JSON, a partner's name
checked as names are, the arena page during a pause, rounded rating returns, a refused arena
form's address, the `at_table` refusal, and the exempt record of an arena table that could not
count."""

from __future__ import annotations

from server.ranked import review
from server.ranked.penalties import Decision
from tests.test_ranked_fixes import _pause, seat_at_a_training_match
from tests.test_ranked_http import (  # noqa: F401  (the fixtures)
    House,
    house,
    settle_abandonment,
)


async def test_json_seat_counts_are_numbers(house: House) -> None:  # noqa: F811
    ana = await house.player("ana")
    op = await house.player("judge", operator=True)
    resp = await ana.post("/api/ranked/queue", {"variant": "paulista", "seats": "2"})
    assert resp.status == 400 and (await resp.json())["error"] == "bad_queue"
    resp = await op.post("/api/ranked/arenas", {"variant": "paulista", "seats": "2"})
    assert resp.status == 400 and (await resp.json())["error"] == "bad_arena"
    await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2}, status=201)
    made = await op.post("/arena", form={"variant": "paulista", "seats": "2"})
    assert made.status == 303  # a form's seat count is its text
    assert (await ana.post("/ranked/queue", form={"variant": "paulista", "seats": "2"})
            ).status == 303


async def test_a_partner_name_no_player_can_have_is_bad_partner(house: House) -> None:  # noqa: F811
    ana = await house.player("ana")
    for name in ("x" * 300, "ab", "a b c"):
        resp = await ana.post("/api/ranked/queue", {"variant": "paulista", "seats": 4,
                                                    "partner": name})
        body = await resp.json()
        assert resp.status == 400 and body["error"] == "bad_partner", name
        assert name not in body["message"]
    resp = await ana.post("/api/ranked/queue", {"variant": "paulista", "seats": 4,
                                                "partner": "nobody"})
    assert resp.status == 404 and (await resp.json())["error"] == "unknown_user"


async def test_the_arena_page_shows_the_pause_and_no_join_form(house: House) -> None:  # noqa: F811
    ana, x, y = await house.players("ana", "xavi", "yara")
    op = await house.player("judge", operator=True)
    arena = (await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2},
                           status=201))["arena"]["id"]
    await _pause(house, ana.id, x.id, y.id)
    page = await (await ana.get("/arena")).text()
    assert "Entrar na arena" not in page and "faltam 15 min 00 s" in page
    assert "Entrar na arena" in await (await x.get("/arena")).text()
    # the address a refused form answered at leads back to the arena page
    back = await ana.get(f"/arena/{arena}/join")
    assert back.status == 303 and back.headers["Location"] == "/arena"


async def test_seated_elsewhere_is_a_409_said_in_pt(house: House) -> None:  # noqa: F811
    ana = await house.player("ana")
    await seat_at_a_training_match(house, ana.id)
    resp = await ana.post("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    assert resp.status == 409 and (await resp.json())["error"] == "at_table"
    page = await ana.post("/ranked/queue", form={"variant": "paulista", "seats": "2"})
    text = await page.text()
    assert page.status == 409 and "outra mesa" in text
    # the match in the way is linked (the page named no table)
    assert ('<a href="/t/00000000000000e9" id="queue-error-table">Ir para essa mesa</a>.'
            in text)


async def test_rating_returned_has_two_decimals(house: House) -> None:  # noqa: F811
    ana, bia = await house.players("ana", "bia")
    op = await house.player("judge", operator=True)
    done = await settle_abandonment(house, "00000000000000c5", [ana.id, bia.id], 0)
    await review.decide(house.pool, done.record.id, op.id, Decision.OVERTURN, "ok")
    [record] = (await ana.json("/api/me/standing"))["abandonments"]
    value = record["rating_returned"]
    assert value == round(value, 2) and value > 0
    detail = await op.json(f"/api/ranked/operator/abandonments/{done.record.id}")
    value = detail["abandonment"]["rating_returned"]
    assert value == round(value, 2)
