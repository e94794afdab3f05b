"""Hand records and statements (truco.records): building, strict parsing, hashing, replay."""

from __future__ import annotations

import copy
import json

import pytest

from truco.actions import Action, ActionKind
from truco.fairness import SHUFFLE_VERSION, canonical_json, commitment, seed_chain
from truco.match import legal_actions, new_match, start_hand
from truco.records import (
    GENESIS_HASH,
    MAX_SEED_CHAIN_LENGTH,
    DealerChoice,
    RecordEnd,
    RecordError,
    ReplayError,
    build_key_handover,
    build_ledger_head,
    build_record,
    build_seed_anchor,
    key_id_for,
    parse_record,
    parse_statement,
    record_hash,
    replay,
    signed_bytes,
)
from truco.variants import MatchConfig, TeamMode, Variant
from verifier.check import check_chain
from verifier.samples import sample_signing_key, sample_table
from verifier.signing import sign_record, sign_statement, verify_signature
from verifier.vectors_run import load_vectors

CONFIG = MatchConfig(Variant.PAULISTA, 2, TeamMode.VOTE)
SEED = seed_chain(bytes(range(32)), 3)[1]
PUBLIC_KEY = bytes(sample_signing_key().verify_key)


def hand_vector() -> dict:
    return copy.deepcopy(load_vectors("hand.json")["record"])


def unsigned(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in ("key_id", "public_key", "signature")}


def minimal_record(**overrides) -> dict:
    parts = {
        "table_id": "t-1",
        "hand_number": 1,
        "chain_start": 1,
        "config": CONFIG,
        "dealer": 0,
        "dealer_by": DealerChoice.ROTATION,
        "score_before": (3, 4),
        "contributions": [b"\x01", None],
        "seed": SEED,
        "actions": [Action(1, ActionKind.RAISE), Action(0, ActionKind.DECLINE)],
        "end": RecordEnd.COMPLETED,
        "forfeit_team": None,
        "score_after": (3, 5),
        "match_winner": None,
        "prev_hash": GENESIS_HASH,
    }
    parts.update(overrides)
    return build_record(**parts)


def test_build_record_derives_commitment_deck_and_deal():
    record = minimal_record()
    parsed = parse_record(record, signed=False)
    assert parsed.commitment == commitment(SEED)
    assert record["version"] == SHUFFLE_VERSION and record["kind"] == "hand"
    assert record["contributions"] == ["01", None]
    assert sorted(record["deck"]) == sorted(str(c) for c in parsed.deck) and len(parsed.deck) == 40
    # seat 1 is mano (dealer 0): it gets deck[0], deck[2], deck[4]; the vira is deck[6]
    assert record["deal"]["hands"][1] == [record["deck"][0], record["deck"][2], record["deck"][4]]
    assert record["deal"]["hands"][0] == [record["deck"][1], record["deck"][3], record["deck"][5]]
    assert record["deal"]["vira"] == record["deck"][6]
    final = replay(parsed)
    assert final.score == (3, 5) and final.hand_over  # seat 0 declined seat 1's truco


def test_record_round_trips_through_canonical_json():
    record = sign_record(minimal_record(), sample_signing_key())
    text = canonical_json(record)
    assert json.loads(text) == record
    assert parse_record(json.loads(text)) == parse_record(record)
    assert record_hash(record) != record_hash(unsigned(record))
    assert verify_signature(record, bytes.fromhex(record["public_key"]))
    assert record["key_id"] == key_id_for(bytes.fromhex(record["public_key"]))


@pytest.mark.parametrize(
    ("mutate", "path", "problem"),
    [
        (lambda r: r.pop("seed"), "$", "missing field(s): seed"),
        (lambda r: r.update(extra=1), "$", "unknown field(s): extra"),
        (lambda r: r.update(version="barajamos-shuffle/v2"), "$.version", "unknown version"),
        (lambda r: r.update(kind="ledger_head"), "$.kind", "expected 'hand'"),
        (lambda r: r.update(hand=0), "$.hand", "outside"),
        (lambda r: r.update(hand=True), "$.hand", "expected an integer, got a boolean"),
        (lambda r: r.update(chain_start=2), "$.chain_start", "outside 1..1"),
        (lambda r: r.update(variant="truco"), "$.variant", "is not one of"),
        (lambda r: r.update(seats=3), "$.seats", "not 2 or 4"),
        (lambda r: r["dealer"].update(seat=2), "$.dealer.seat", "outside 0..1"),
        (lambda r: r["dealer"].update(by="vote"), "$.dealer.by", "is not one of"),
        (lambda r: r.update(score_before=[1]), "$.score_before", "exactly 2"),
        (lambda r: r.update(score_before=[1, -1]), "$.score_before[1]", "outside"),
        (lambda r: r.update(commitment="AB" * 32), "$.commitment", "lowercase"),
        (lambda r: r.update(commitment="ab" * 31), "$.commitment", "expected 32 bytes"),
        (lambda r: r.update(contributions=["01"]), "$.contributions", "exactly 2"),
        (lambda r: r.update(contributions=["", None]), "$.contributions[0]", "1..256 bytes"),
        (lambda r: r.update(seed=None), "$.seed", "expected a string, got null"),
        (lambda r: r["deck"].__setitem__(3, "8C"), "$.deck[3]", "unknown card"),
        (lambda r: r["deck"].pop(), "$.deck", "exactly 40"),
        (lambda r: r["deal"]["hands"][0].pop(), "$.deal.hands[0]", "exactly 3"),
        (lambda r: r["deal"].update(vira=None), "$.deal.vira", "expected a string"),
        (lambda r: r["actions"].append({"seat": 0, "do": "dance"}), "$.actions[2]", "verb"),
        (lambda r: r["actions"].append({"seat": 5, "do": "raise"}), "$.actions[2].seat", "seat 5"),
        (
            lambda r: r["actions"].append(
                {"seat": 0, "do": "play", "card": "3C", "covered": False}
            ),
            "$.actions[2]",
            "canonical form",
        ),
        (lambda r: r.update(end="finished"), "$.end", "is not one of"),
        (lambda r: r.update(end="abandonment"), "$.forfeit_team", "abandoning team"),
        (lambda r: r.update(forfeit_team=1), "$.forfeit_team", "abandoning team"),
        (lambda r: r.update(match_winner=2), "$.match_winner", "outside 0..1"),
        (lambda r: r.update(prev="00"), "$.prev", "expected 32 bytes"),
        (
            lambda r: r.update(score_before=[1, 0], dealer={"seat": 0, "by": "draw"}),
            "$.score_before",
            "starts at [0, 0]",
        ),
    ],
)
def test_structure_errors_name_the_path_and_problem(mutate, path, problem):
    record = minimal_record()
    mutate(record)
    with pytest.raises(RecordError) as caught:
        parse_record(record, signed=False)
    assert caught.value.path == path
    assert problem in caught.value.problem


def test_signed_records_need_all_signature_fields_and_vice_versa():
    record = minimal_record()
    with pytest.raises(RecordError, match="missing field"):
        parse_record(record)
    signed = sign_record(record, sample_signing_key())
    with pytest.raises(RecordError, match="unknown field"):
        parse_record(signed, signed=False)
    with pytest.raises(ValueError, match="already signed"):
        sign_record(signed, sample_signing_key())


def test_build_record_refuses_inconsistent_parts():
    with pytest.raises(ValueError):
        minimal_record(contributions=[None])
    with pytest.raises(RecordError):
        minimal_record(end=RecordEnd.ABANDONMENT)  # no forfeit team named


def test_replay_accepts_the_vector_and_reports_an_illegal_action():
    record = hand_vector()
    replay(parse_record(record))
    illegal = copy.deepcopy(record)
    illegal["actions"].insert(0, {"seat": 0, "do": "accept"})
    with pytest.raises(ReplayError, match=r"action 0 .* is illegal \["):
        replay(parse_record(illegal))


def test_replay_checks_the_end_and_the_score():
    record = hand_vector()
    unfinished = copy.deepcopy(record)
    unfinished["actions"] = unfinished["actions"][:-1]
    with pytest.raises(ReplayError, match="still in progress"):
        replay(parse_record(unfinished))
    wrong_score = copy.deepcopy(record)
    wrong_score["score_after"] = [0, 0]
    with pytest.raises(ReplayError, match="the replay scores"):
        replay(parse_record(wrong_score))
    wrong_winner = copy.deepcopy(record)
    wrong_winner["match_winner"] = 1
    with pytest.raises(ReplayError, match="match winner"):
        replay(parse_record(wrong_winner))


def test_replay_of_abandoned_and_cancelled_hands():
    for end, winner in ((RecordEnd.ABANDONMENT, 0), (RecordEnd.CANCELLED, None)):
        table = sample_table(
            table_id=f"t-{end.value}", config=CONFIG, hands=2, seed=5, last_end=end
        )
        last = parse_record(table.records[-1])
        assert last.end is end
        state = replay(last)
        assert state.match_winner == winner == last.match_winner


def test_a_mao_de_ferro_hand_plays_by_position():
    # Both teams at 11 in Paulista: cards are played blind, by position.
    config = MatchConfig(Variant.PAULISTA, 2, TeamMode.VOTE)
    record = minimal_record(score_before=(11, 11), actions=[], end=RecordEnd.CANCELLED,
                            score_after=(11, 11))  # fmt: skip
    parsed = parse_record(record, signed=False)
    state, _ = start_hand(new_match(config, 0, (11, 11)), parsed.deal)
    blind = [a for a in legal_actions(state, 1) if a.kind is ActionKind.PLAY]
    assert blind and all(a.position is not None and a.card is None for a in blind)
    played = minimal_record(score_before=(11, 11), actions=[blind[0]], end=RecordEnd.CANCELLED,
                            score_after=(11, 11))  # fmt: skip
    assert played["actions"] == [{"seat": 1, "do": "play", "position": blind[0].position}]
    replay(parse_record(played, signed=False))


def test_statements_build_sign_and_parse():
    key = sample_signing_key()
    anchor = sign_statement(build_seed_anchor("t-1", 1, 3, seed_chain(SEED, 3)[0]), key)
    head = sign_statement(
        build_ledger_head(1_700_000_000, {"b": (2, bytes(32)), "a": (1, bytes(32))}), key
    )
    new_key = bytes(range(32))
    handover = sign_statement(build_key_handover(1_700_000_000, new_key), key)
    assert [t["table"] for t in head["tables"]] == ["a", "b"]
    for statement in (anchor, head, handover):
        parsed = parse_statement(statement)
        assert parsed.signed_by is not None
        assert verify_signature(statement, parsed.signed_by.public_key)
    assert handover["new_key_id"] == key_id_for(new_key)
    bad = dict(handover, new_key_id="00" * 8)
    with pytest.raises(RecordError, match="new_key_id"):
        parse_statement(bad)
    with pytest.raises(RecordError, match="sorted"):
        parse_statement(dict(head, tables=list(reversed(head["tables"]))))
    with pytest.raises(ValueError, match="sign_record"):
        sign_statement(minimal_record(), key)


def test_signed_bytes_leave_out_only_the_signature():
    record = sign_record(minimal_record(), sample_signing_key())
    without = {k: v for k, v in record.items() if k != "signature"}
    assert signed_bytes(record) == canonical_json(without)
    assert b'"public_key"' in signed_bytes(record)


@pytest.mark.parametrize("variant", list(Variant))
@pytest.mark.parametrize("seats", [2, 4])
@pytest.mark.parametrize("mode", list(TeamMode))
def test_random_legal_tables_build_records_that_verify(variant, seats, mode):
    # Random legal playouts (timeouts included) of every configuration, through build_record and
    # sign_record, replay exactly; each table ends with a forfeit or a cancellation.
    config = MatchConfig(variant, seats, mode)
    for seed, end in enumerate(RecordEnd):
        table = sample_table(table_id=f"p-{seed}", config=config, hands=6, seed=seed, last_end=end)
        report = check_chain([table.anchor_statement, *table.records], pinned=[PUBLIC_KEY])
        assert report.ok, report.failures


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r["deal"].update(vira=5), "$.deal.vira: expected a string, got an integer"),
        (lambda r: r["deck"].__setitem__(1, 5), "$.deck[1]: expected a string, got an integer"),
        (lambda r: r["deck"].__setitem__(1, "8C"), "$.deck[1]: unknown card"),
    ],
)
def test_a_card_error_names_its_path_once(mutate, message):
    record = minimal_record()
    mutate(record)
    with pytest.raises(RecordError) as caught:
        parse_record(record, signed=False)
    assert str(caught.value).startswith(message)
    assert str(caught.value).count("$.") == 1


def test_a_seed_anchor_names_at_most_the_longest_chain():
    anchor = seed_chain(SEED, 1)[0]
    parsed = parse_statement(build_seed_anchor("t-1", 1, MAX_SEED_CHAIN_LENGTH, anchor),
                             signed=False)  # fmt: skip
    assert parsed.length == MAX_SEED_CHAIN_LENGTH == 2**20
    with pytest.raises(RecordError) as caught:
        build_seed_anchor("t-1", 1, MAX_SEED_CHAIN_LENGTH + 1, anchor)
    assert caught.value.path == "$.length"
