"""Partner signals as data: the codes the server accepts per variant family, with labels.

Signals are the only talk at the table (no free chat) and only the partner sees them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from truco.variants import Variant


class SignalFamily(StrEnum):
    BRAZILIAN = "brazilian"
    ARGENTINE = "argentine"


@dataclass(frozen=True, slots=True)
class Signal:
    code: str  # stable, sent by clients and stored
    label: str  # what the partner is shown


_BRAZILIAN: tuple[Signal, ...] = (
    Signal("zap", "Tenho o zap"),
    Signal("copas", "Tenho copas"),
    Signal("espadilha", "Tenho espadilha"),
    Signal("pica_fumo", "Tenho pica-fumo"),
    Signal("tres", "Tenho três"),
    Signal("pede_truco", "Pede truco!"),
    Signal("nao_pede_truco", "Não pede truco"),
    Signal("fraco", "Tô fraco"),
)

_ARGENTINE: tuple[Signal, ...] = (
    Signal("macho", "Tengo el macho"),
    Signal("hembra", "Tengo la hembra"),
    Signal("siete_espadas", "Tengo el siete de espadas"),
    Signal("siete_oro", "Tengo el siete de oro"),
    Signal("tres", "Tengo tres"),
    Signal("tengo_envido", "Tengo envido"),
    Signal("quiero_truco", "Quiero truco"),
    Signal("nada", "No tengo nada"),
)

SIGNALS: dict[SignalFamily, tuple[Signal, ...]] = {
    SignalFamily.BRAZILIAN: _BRAZILIAN,
    SignalFamily.ARGENTINE: _ARGENTINE,
}

FAMILY: dict[Variant, SignalFamily] = {
    Variant.PAULISTA: SignalFamily.BRAZILIAN,
    Variant.MINEIRO: SignalFamily.BRAZILIAN,
    Variant.ARGENTINO: SignalFamily.ARGENTINE,
}


def signals_for(variant: Variant) -> tuple[Signal, ...]:
    """The signals a partner may send at a table of `variant`, in display order."""
    return SIGNALS[FAMILY[Variant(variant)]]


def parse_signal(variant: Variant, code: object) -> Signal:
    """The signal with that code at a `variant` table; ValueError for anything else."""
    for signal in signals_for(variant):
        if signal.code == code:
            return signal
    raise ValueError(f"unknown signal {code!r} for {Variant(variant).value}")
