"""Seeds at rest: AES-256-GCM with the server's `seed_key`, a fresh 96-bit nonce per value.

A seed (or a chain tip) not yet revealed is secret: a leaked database or backup must not tell
anyone the cards of a hand still in play (nor a partner signal, which tells of them). The
associated data binds each sealed value to its purpose, table and hand number, so a sealed
value moved to another row does not open.
"""

from __future__ import annotations

import os
from enum import StrEnum

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

NONCE_BYTES = 12


class SealedKind(StrEnum):
    SEED = "seed"  # a hand's seed; number = table hand number
    TIP = "tip"  # a seed chain's tip; number = its chain_start
    SIGNAL = "signal"  # a partner signal of a hand in play; number = table hand number


class SealError(ValueError):
    """A sealed value that does not open with this key for this table and number."""


def _associated(kind: SealedKind, table_id: str, number: int) -> bytes:
    return f"barajamos/{kind.value}/{table_id}/{number}".encode()


def seal(key: bytes, kind: SealedKind, table_id: str, number: int, secret: bytes) -> bytes:
    """nonce || ciphertext+tag."""
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(key).encrypt(nonce, secret, _associated(kind, table_id, number))


def unseal(key: bytes, kind: SealedKind, table_id: str, number: int, sealed: bytes) -> bytes:
    nonce, body = sealed[:NONCE_BYTES], sealed[NONCE_BYTES:]
    try:
        return AESGCM(key).decrypt(nonce, body, _associated(kind, table_id, number))
    except (InvalidTag, ValueError) as exc:
        raise SealError(f"cannot open the sealed {kind.value} of {table_id}/{number}") from exc
