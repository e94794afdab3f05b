"""Ed25519 signing and verification of records and statements (docs/FAIRNESS.md 7-9).

The server signs with `sign_record` / `sign_statement`; the verifier checks with
`verify_signature`. The signature covers the canonical JSON of everything but `signature`; the
record carries the signer's `key_id` and `public_key` so it can be checked alone, but users
should pin the house's published key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import nacl.exceptions
import nacl.signing

from truco.records import (
    SIGNATURE_FIELDS,
    key_id_for,
    parse_record,
    parse_statement,
    record_kind,
    signed_bytes,
)
from truco.records import RecordKind as _RecordKind
from verifier.pubkeys import PublicKeyError, load_public_key, parse_public_key

__all__ = [
    "PublicKeyError",
    "SigningKey",
    "VerifyKey",
    "key_id_for",
    "load_public_key",
    "parse_public_key",
    "sign_built_record",
    "sign_record",
    "sign_statement",
    "signing_key_from_seed",
    "verify_signature",
]

SigningKey = nacl.signing.SigningKey
VerifyKey = nacl.signing.VerifyKey


def signing_key_from_seed(seed: bytes) -> SigningKey:
    """An Ed25519 signing key from its 32-byte seed (RFC 8032 private key)."""
    if not isinstance(seed, bytes) or len(seed) != 32:
        raise ValueError("an Ed25519 key seed is exactly 32 bytes")
    return nacl.signing.SigningKey(seed)


def _refuse_signed(unsigned: Mapping[str, Any]) -> None:
    present = [field for field in SIGNATURE_FIELDS if field in unsigned]
    if present:
        raise ValueError(f"already signed: it has {', '.join(present)}")


def _sign(
    unsigned: Mapping[str, Any], signing_key: SigningKey, *, checked: bool = True
) -> dict[str, Any]:
    public_key = bytes(signing_key.verify_key)
    signed: dict[str, Any] = dict(unsigned)
    signed["key_id"] = key_id_for(public_key)
    signed["public_key"] = public_key.hex()
    signed["signature"] = signing_key.sign(signed_bytes(signed, checked=checked)).signature.hex()
    return signed


def sign_record(unsigned: Mapping[str, Any], signing_key: SigningKey) -> dict[str, Any]:
    """Sign a hand record from `truco.records.build_record`; it is validated first."""
    _refuse_signed(unsigned)
    parse_record(dict(unsigned), signed=False)
    signed = _sign(unsigned, signing_key)
    parse_record(signed)
    return signed


def sign_built_record(unsigned: Mapping[str, Any], signing_key: SigningKey) -> dict[str, Any]:
    """Sign the record `truco.records.build_record` just returned, without validating it again.

    For the server only, which signs every hand it records: build_record already parsed its
    own output, so parsing it before and after signing (as `sign_record` does) only repeats
    that work on the table's hot path. A record from anywhere else goes through `sign_record`.
    """
    _refuse_signed(unsigned)
    return _sign(unsigned, signing_key, checked=False)


def sign_statement(unsigned: Mapping[str, Any], signing_key: SigningKey) -> dict[str, Any]:
    """Sign a seed-anchor, ledger-head or key hand-over statement (`truco.records.build_*`)."""
    _refuse_signed(unsigned)
    if record_kind(dict(unsigned)) is _RecordKind.HAND:
        raise ValueError("use sign_record for hand records")
    parse_statement(dict(unsigned), signed=False)
    signed = _sign(unsigned, signing_key)
    parse_statement(signed)
    return signed


def verify_signature(obj: Mapping[str, Any], public_key: bytes, *, parsed: bool = False) -> bool:
    """Whether `obj["signature"]` is a valid Ed25519 signature by `public_key` of its bytes.

    `parsed=True` when `obj` has already passed parse_record / parse_statement (skips re-walking
    its types before encoding).
    """
    try:
        signature = bytes.fromhex(obj["signature"])
        message = signed_bytes(obj, checked=not parsed)
        nacl.signing.VerifyKey(public_key).verify(message, signature)
    except (nacl.exceptions.BadSignatureError, nacl.exceptions.ValueError, ValueError, KeyError):
        return False
    return True
