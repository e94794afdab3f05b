"""`python -m verifier`, and the entry of the verifier's zip application (`verifier.bundle`):
the CLI, or one line saying how to install PyNaCl where it is missing (a plain `python3`
running the downloaded file has none), instead of a traceback."""

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
