"""Reading a public key the user pins (`--key HEX`, `--key-file F`): hex and files only, no
cryptography, so that the commands that check no signature run without PyNaCl."""

from __future__ import annotations

from pathlib import Path

from truco.records import PUBLIC_KEY_BYTES

__all__ = ["MAX_KEY_FILE_BYTES", "PublicKeyError", "load_public_key", "parse_public_key"]

MAX_KEY_FILE_BYTES = 4096


class PublicKeyError(ValueError):
    """A public key that cannot be read (bad hex, wrong size, unreadable file)."""


def parse_public_key(text: str) -> bytes:
    """A public key written as 64 lowercase or uppercase hex digits (surrounding space ignored)."""
    cleaned = text.strip()
    try:
        key = bytes.fromhex(cleaned)
    except ValueError:
        raise PublicKeyError("a public key is 64 hexadecimal digits") from None
    if len(key) != PUBLIC_KEY_BYTES or len(cleaned) != 2 * PUBLIC_KEY_BYTES:
        raise PublicKeyError(f"a public key is {PUBLIC_KEY_BYTES} bytes (64 hex digits)")
    return key


def load_public_key(path: Path) -> bytes:
    """A key file: the 64-hex public key on its first line (more lines, e.g. comments, ignored)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        raise PublicKeyError(f"cannot read key file {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_KEY_FILE_BYTES:
        raise PublicKeyError(f"key file {path} is larger than {MAX_KEY_FILE_BYTES} bytes")
    try:
        lines = data.decode("ascii").splitlines()
    except UnicodeDecodeError:
        raise PublicKeyError(f"key file {path} is not a text file of hex digits") from None
    if not lines:
        raise PublicKeyError(f"key file {path} is empty")
    try:
        return parse_public_key(lines[0])
    except PublicKeyError as exc:
        raise PublicKeyError(f"key file {path}: {exc}") from None
