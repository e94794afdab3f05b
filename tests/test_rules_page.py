"""The rules page, /regras: a new player found the rules nowhere on the site. Its figures are
the engine's and the house's own; checked here against ../shared/RULES.md's own words."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from server.clock import VirtualClock
from tests.conftest import AppFactory


def text_of(page: str, ident: str) -> str:
    found = re.search(rf'id="{ident}"[^>]*>(.*?)</(dd|span)>', page, re.S)
    assert found, ident
    return re.sub(r"\s+", " ", found.group(1)).strip()


async def test_the_rules_page_says_each_variants_figures(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    client = await aiohttp_client(make_app(clock=vclock))
    resp = await client.get("/regras")
    page = await resp.text()
    assert resp.status == 200
    # RULES.md's ladders: Paulista 1 3 6 9 12, Mineiro 2 4 6 10 12, Argentino 1 2 3 4
    assert text_of(page, "ladder-paulista") == (
        "vale 1 → truco (3) → seis (6) → nove (9) → doze (12)")
    assert text_of(page, "ladder-mineiro") == (
        "vale 2 → truco (4) → seis (6) → nove (10) → doze (12)")
    assert text_of(page, "ladder-argentino") == (
        "vale 1 → truco (2) → retruco (3) → vale cuatro (4)")
    # RULES.md's envido values (quiero / no quiero): E 2/1, R 3/1, F falta/1, EE 4/2, ER 5/2,
    # EF falta/2, RF falta/3, EER 7/4, EEF falta/4, ERF falta/5, EERF falta/7
    rows = re.findall(r'<tr><th scope="row">([^<]+)</th><td>([^<]+)</td><td>(\d+)</td></tr>',
                      page)
    letters = {"envido": "E", "real envido": "R", "falta envido": "F"}
    table = {"".join(letters[c] for c in calls.lower().split(", ")): (quiero, int(no))
             for calls, quiero, no in rows}
    assert table == {
        "E": ("2", 1), "R": ("3", 1), "F": ("a falta", 1), "EE": ("4", 2), "ER": ("5", 2),
        "EF": ("a falta", 2), "RF": ("a falta", 3), "EER": ("7", 4), "EEF": ("a falta", 4),
        "ERF": ("a falta", 5), "EERF": ("a falta", 7)}
    # the special hands, the targets and the clocks (RULES.md: 20 s, 10 s at ranked; 10 and
    # 6 automatic actions; 2 s absent; 10 s to agree; 60 s empty seat)
    for said in ("Mão de onze</strong>: quando só uma dupla tem 11", "(a mão vale 3)",
                 "Mão de dez</strong>: quando só uma dupla tem 10", "(a mão vale 4)",
                 "a partida vai a 12 pontos", "A partida vai a 30 pontos",
                 "<strong>20 s</strong> nas mesas de treino e privadas",
                 "<strong>10 s</strong> nas ranqueadas e arenas",
                 "uma dupla tem 10 s para concordar", "depois de 2 s",
                 "<strong>10 jogadas automáticas seguidas</strong> (6 nas ranqueadas",
                 "um lugar vazio por 60 s cancela a partida",
                 "<strong>10 é o valete</strong> (sota), <strong>11 o cavalo</strong>",
                 # "After the truco is answered there is no more envido"; the mazo's +1 "if
                 # envido could still have been called (round 1, no envido called, truco not
                 # yet answered)"; the answering team's envido "while one of its players still
                 # in the hand has not played a card in round 1" (an Argentine player's review)
                 "Respondido o truco, não há mais envido.",
                 "(na 1ª rodada, sem envido cantado e sem truco respondido)",
                 "enquanto um dos seus jogadores ainda na mão não jogou carta na 1ª rodada"):
        assert said in page, said
    assert text_of(page, "signals-brazilian").startswith("“Tenho o zap”, “Tenho copas”")
    assert "“No tengo nada”" in text_of(page, "signals-argentine")
    # every page's footer leads here, signed in or not
    home = await (await client.get("/")).text()
    assert 'href="/regras" id="rules-footer-link"' in home
    assert '<a href="/regras">As regras de cada variante</a>' in home
