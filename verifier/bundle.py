"""The verifier as one file a player can download and run: a Python zip application (PEP 441)
holding the `truco` and `verifier` packages' source, byte for byte the same wherever it is built
from the same source, so that anyone can rebuild it from a checkout and compare its SHA-256 with
the one the house publishes.

    python -m verifier.bundle barajamos-verify.pyz   # writes it, prints its SHA-256
    python3 barajamos-verify.pyz hand record.json   # needs only Python 3.11+ and PyNaCl

Reproducible: the entries are sorted, stored uncompressed (a compressor's output may differ
between zlib versions), dated 1980-01-01 and given one mode; nothing of the machine, the clock
or the checkout's path goes in.
"""

from __future__ import annotations

import hashlib
import io
import sys
import zipfile
from pathlib import Path

import truco
import verifier

NAME = "barajamos-verify.pyz"
SHEBANG = b"#!/usr/bin/env python3\n"
_DATE = (1980, 1, 1, 0, 0, 0)
_MODE = 0o100644 << 16  # a regular file, rw-r--r--


def _sources() -> list[tuple[str, bytes]]:
    """Every file of the two packages (code, typing marker, known-answer vectors), by its path
    in the archive, sorted; no compiled caches."""
    files: list[tuple[str, bytes]] = []
    for package in (truco, verifier):
        assert package.__file__ is not None
        root = Path(package.__file__).parent
        for path in root.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                name = f"{root.name}/{path.relative_to(root).as_posix()}"
                files.append((name, path.read_bytes()))
    # the archive's entry is the package's own `python -m verifier`
    files.append(("__main__.py", (Path(verifier.__file__).parent / "__main__.py").read_bytes()))
    return sorted(files)


def build() -> bytes:
    """The zip application's bytes."""
    out = io.BytesIO()
    out.write(SHEBANG)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in _sources():
            info = zipfile.ZipInfo(name, date_time=_DATE)
            info.external_attr = _MODE
            info.create_system = 3  # Unix, wherever it is built: the modes above are Unix modes
            archive.writestr(info, data)
    return out.getvalue()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(f"usage: python -m verifier.bundle OUT.pyz  (e.g. {NAME})", file=sys.stderr)
        return 2
    data = build()
    try:
        Path(args[0]).write_bytes(data)
    except OSError as exc:
        print(f"verifier.bundle: cannot write {args[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"{digest(data)}  {args[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
