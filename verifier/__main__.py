"""`python -m verifier`, and the entry of the verifier's zip application (`verifier.bundle`):
the CLI. A plain `python3` running the downloaded file may have no PyNaCl: `deck`, `--help` and
the derivation vectors run without it, and the commands that check signatures say how to
install it (verifier.cli); should an import still need it, one line says so here, instead of a
traceback."""

import sys

try:
    from verifier.cli import main
except ModuleNotFoundError as exc:
    if (exc.name or "").partition(".")[0] != "nacl":
        raise
    print("barajamos-verify: PyNaCl is not installed (it checks the hand records' Ed25519"
          " signatures): run `python3 -m pip install pynacl`, then this again", file=sys.stderr)
    raise SystemExit(2) from None

raise SystemExit(main())
