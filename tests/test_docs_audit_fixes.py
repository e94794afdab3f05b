"""The documentation audit's findings fixed in `server/ranked/http.py` (with docs/RANKED.md):
every rating figure of the ranked JSON rounded to 2 decimals at the boundary (the review
record's `rating_change`, the audit rows' `detail.rating_returned`), an arena's minutes typed
in JSON as its seats are, and the answers' wrappers and the public leaderboard as documented."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from server.app import time_filter
from server.ranked import review
from tests.test_ranked_http import (  # noqa: F401  (the fixtures)
    House,
    house,
    settle_abandonment,
)


def _two_decimals(value: Any) -> bool:
    return isinstance(value, float) and value == round(value, 2)


async def test_every_rating_figure_of_the_review_json_has_two_decimals(
        house: House) -> None:  # noqa: F811
    ana, bia = await house.players("ana", "bia")
    op = await house.player("judge", operator=True)
    done = await settle_abandonment(house, "00000000000000e1", [ana.id, bia.id], 0)
    record_id = done.record.id
    # the stored figures keep their full precision (what made the rounding visible)
    lost = await house.pool.fetchval(
        "SELECT rating_after - rating_before FROM ranked_rating_history "
        "WHERE user_id = $1 AND reason = 'match'", ana.id)
    assert lost < 0 and lost != round(lost, 2)
    detail = await op.json(f"/api/ranked/operator/abandonments/{record_id}")
    assert _two_decimals(detail["abandonment"]["rating_change"])
    assert detail["abandonment"]["rating_change"] == round(lost, 2)
    decided = await op.json(f"/api/ranked/operator/abandonments/{record_id}/decision",
                            {"decision": "overturn", "note": "Queda do provedor."})
    assert _two_decimals(decided["abandonment"]["rating_change"])
    assert _two_decimals(decided["abandonment"]["rating_returned"])
    [row] = decided["audit"]
    assert row["action"] == "overturn" and row["detail"]["rating_returned"] == round(-lost, 2)
    # the stored audit row is untouched: the exact amount given back
    [stored, *_] = await review.audit_log(house.pool, record_id=record_id)
    assert stored.detail["rating_returned"] != round(stored.detail["rating_returned"], 2)
    detail = await op.json(f"/api/ranked/operator/abandonments/{record_id}")
    assert _two_decimals(detail["abandonment"]["rating_change"])
    overturn = next(a for a in detail["audit"] if a["action"] == "overturn")
    assert _two_decimals(overturn["detail"]["rating_returned"])
    log = await op.json(f"/api/ranked/operator/audit?record={record_id}")
    overturn = next(a for a in log["audit"] if a["action"] == "overturn")
    assert overturn["detail"]["rating_returned"] == round(-lost, 2)
    assert overturn["detail"]["chips_returned"] == 50
    # the player's own view was already rounded, and says the same figures
    [mine] = (await ana.json("/api/me/standing"))["abandonments"]
    assert mine["rating_change"] == round(lost, 2)
    assert mine["rating_returned"] == round(-lost, 2)


async def test_an_arenas_numbers_in_json_are_numbers_as_its_seats(
        house: House) -> None:  # noqa: F811
    op = await house.player("judge", operator=True)
    good = {"variant": "paulista", "seats": 2, "minutes": 30, "starts_in_minutes": 5}
    for change in ({"minutes": "30"}, {"starts_in_minutes": "5"}, {"seats": "2"},
                   {"minutes": "x"}, {"starts_in_minutes": ""}, {"minutes": 30.0},
                   {"minutes": True}, {"minutes": None}, {"starts_in_minutes": "²"}):
        resp = await op.post("/api/ranked/arenas", {**good, **change})
        body = await resp.json()
        assert resp.status == 400 and body["error"] == "bad_arena", (change, body)
    assert (await op.json("/api/ranked/arenas"))["arenas"] == []
    # a form's fields are text: digits pass, anything else is `bad_filter`
    resp = await op.post("/api/ranked/arenas", form={"variant": "paulista", "seats": "2",
                                                     "minutes": "x"})
    assert resp.status == 400 and (await resp.json())["error"] == "bad_filter"
    made = await op.post("/arena", form={"variant": "paulista", "seats": "2", "minutes": "30",
                                         "starts_in_minutes": "5"})
    assert made.status == 303
    # JSON numbers, and fields left out (their defaults), are fine
    answer = await op.json("/api/ranked/arenas", good, status=201)
    assert set(answer) == {"arena"} and answer["arena"]["state"] == "upcoming"
    answer = await op.json("/api/ranked/arenas", {"variant": "mineiro"}, status=201)
    assert answer["arena"]["seats"] == 2


async def test_the_answers_are_wrapped_as_documented(house: House) -> None:  # noqa: F811
    ana, bia = await house.players("ana", "bia")
    op = await house.player("judge", operator=True)
    done = await settle_abandonment(house, "00000000000000e2", [ana.id, bia.id], 0)
    record_id = done.record.id
    appealed = await ana.json(f"/api/me/abandonments/{record_id}/appeal",
                              {"text": "caiu a luz"})
    assert set(appealed) == {"abandonment"} and appealed["abandonment"]["id"] == record_id
    detail = await op.json(f"/api/ranked/operator/abandonments/{record_id}")
    assert set(detail) == {"abandonment", "audit"}
    assert detail["abandonment"]["review_state"] == "pending:open"
    assert "restart_overlap" in detail["abandonment"]
    assert [(a["action"], a["actor"]) for a in detail["audit"]] == [
        ("appeal", "ana"), ("created", None)]
    assert set(detail["audit"][0]) == {"id", "record", "actor", "action", "note", "detail",
                                       "at"}
    decided = await op.json(f"/api/ranked/operator/abandonments/{record_id}/decision",
                            {"decision": "uphold", "note": "Mantido.",
                             "expected_state": "pending:open"})
    assert set(decided) == {"abandonment", "audit"}
    assert [(a["action"], a["actor"], a["detail"]) for a in decided["audit"]] == [
        ("uphold", "judge", {"from": "pending"})]
    arena = await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2},
                          status=201)
    arena_id = arena["arena"]["id"]
    joined = await bia.json(f"/api/ranked/arenas/{arena_id}/join", {})
    assert set(joined) == {"arena"} and joined["arena"]["joined"] is True
    left = await bia.json(f"/api/ranked/arenas/{arena_id}/leave", {})
    assert set(left) == {"arena"} and left["arena"]["joined"] is False


async def test_the_leaderboard_is_public(house: House) -> None:  # noqa: F811
    ana = await house.player("ana")
    await house.rate(ana, 1612.345)
    board = await house.client.get("/api/ranked/leaderboard?variant=paulista&seats=2")
    assert board.status == 200
    [row] = (await board.json())["leaderboard"]
    assert row["player"] == "ana" and row["rating"] == 1612.35
    page = await house.client.get("/leaderboard", headers={"Accept": "text/html"})
    assert page.status == 200 and "ana" in await page.text()
    # the other routes keep the login
    resp = await house.client.get("/api/ranked/arenas")
    assert resp.status == 401 and (await resp.json())["error"] == "login_required"


async def test_until_the_last_day_takes_in_that_whole_day(house: House) -> None:  # noqa: F811
    assert time_filter("9999-12-31", "until", end=True) == datetime.max.replace(tzinfo=UTC)
    assert time_filter("9999-12-31", "since") == datetime(9999, 12, 31, tzinfo=UTC)
    ana, bia = await house.players("ana", "bia")
    op = await house.player("judge", operator=True)
    done = await settle_abandonment(house, "00000000000000e3", [ana.id, bia.id], 0)
    listed = await op.json("/api/ranked/operator/abandonments?until=9999-12-31")
    assert [r["id"] for r in listed["abandonments"]] == [done.record.id]
    assert (await op.json("/api/ranked/operator/abandonments?since=9999-12-31")
            )["abandonments"] == []
    live = await op.get("/api/operator/abandonments?until=9999-12-31")
    assert live.status == 200, await live.text()
    assert (await op.get("/operator/abandonments?until=9999-12-31")).status == 200


def test_a_date_in_any_iso_form_is_a_whole_day() -> None:
    # a review asked for until=20261206 (ISO 8601's basic form, which Python reads too): only a
    # 10-character value counted as a day, so the bound was that day's first midnight and the
    # whole day was left out, silently (since=until=20261206 was even refused as a backward range)
    day_end = datetime(2026, 12, 7, tzinfo=UTC)
    for form in ("2026-12-06", "20261206", "2026-W49-7", "2026W497"):
        assert time_filter(form, "until", end=True) == day_end, form
        assert time_filter(form, "since") == datetime(2026, 12, 6, tzinfo=UTC), form
    assert time_filter("2026-12-06T10:30", "until", end=True) == datetime(2026, 12, 6, 10, 30,
                                                                         tzinfo=UTC)
    assert time_filter("20261206T103000Z", "until", end=True) == datetime(2026, 12, 6, 10, 30,
                                                                          tzinfo=UTC)
