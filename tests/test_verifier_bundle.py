"""The verifier as one downloadable file (`verifier.bundle`): the same bytes from every build of
the same source, runnable with Python and PyNaCl alone (no server code, nothing installed from
this project), and served by the house with the SHA-256 its pages show."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nacl
from aiohttp.test_utils import TestClient

from tests.conftest import AppFactory, signup
from verifier import bundle
from verifier.vectors_run import load_vectors


def _standalone(pyz: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the file as a player would, with none of this checkout importable: `-S` skips the
    site hooks (this project's editable install among them) and PYTHONPATH holds only where
    PyNaCl (and its cffi) is installed."""
    site = str(Path(nacl.__file__).resolve().parent.parent)
    return subprocess.run(
        [sys.executable, "-S", str(pyz), *args], capture_output=True, text=True, cwd=cwd,
        env={"PYTHONPATH": site, "PATH": "/usr/bin:/bin"})


def test_every_build_is_the_same_file(tmp_path: Path) -> None:
    first, second = bundle.build(), bundle.build()
    assert first == second and first.startswith(b"#!/usr/bin/env python3\n")
    assert bundle.main([str(tmp_path / bundle.NAME)]) == 0
    assert (tmp_path / bundle.NAME).read_bytes() == first
    with zipfile.ZipFile(tmp_path / bundle.NAME) as archive:
        names = archive.namelist()
        infos = archive.infolist()
    assert names == sorted(names) and "__main__.py" in names
    assert "truco/records.py" in names and "verifier/cli.py" in names
    assert "verifier/vectors/hand.json" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert not [n for n in names if n.split("/")[0] not in ("truco", "verifier", "__main__.py")]
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert {i.compress_type for i in infos} == {zipfile.ZIP_STORED}


NACL_MISSING = (
    "barajamos-verify: PyNaCl is not installed (it checks the hand records' Ed25519"
    " signatures): run `python3 -m pip install pynacl`, then this again\n")


def test_without_pynacl_the_file_says_how_to_install_it(tmp_path: Path) -> None:
    # a plain python3 without PyNaCl ended in a ModuleNotFoundError traceback; then it refused
    # every command, `deck` and `--help` too, which check no signature
    pyz = tmp_path / bundle.NAME
    pyz.write_bytes(bundle.build())
    record = tmp_path / "hand.json"
    record.write_text(json.dumps(load_vectors("hand.json")["record"]))

    def bare(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-S", str(pyz), *args], capture_output=True,
                              text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})

    done = bare("--help")
    assert done.returncode == 0 and done.stderr == "" and "{deck,hand,chain,vectors}" in done.stdout
    # the deck needs SHA-256 and HMAC only: the same as with PyNaCl
    case = load_vectors("decks.json")["cases"][0]
    argv = ["deck", "--seed", case["seed"], "--table", case["table"], "--hand",
            str(case["hand"]), "--variant", case["variant"], "--seats",
            str(len(case["contributions"])),
            *(f"--contribution={seat}={c}" for seat, c in enumerate(case["contributions"]) if c)]
    done = bare(*argv)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "deck        " + " ".join(case["expect"]["deck"]) in done.stdout
    # the signatures say how to install it
    for args in (["hand", str(record)], ["chain", str(record)]):
        done = bare(*args)
        assert done.returncode == 2 and done.stdout == "" and done.stderr == NACL_MISSING
    # the vectors that need no signature run; the signed ones are not run, and it is no pass
    done = bare("vectors")
    assert done.returncode == 2 and done.stderr == NACL_MISSING
    lines = done.stdout.strip().splitlines()
    assert lines[-1].endswith("vectors run passed; 2 file(s) of signed vectors not run")
    assert [line for line in lines if line.startswith("skip")] == [
        "skip  hand: signed vectors: not run: they check Ed25519 signatures, which need PyNaCl",
        "skip  chain: signed vectors: not run: they check Ed25519 signatures, which need PyNaCl",
    ]
    assert sum(line.startswith("PASS  deck: ") for line in lines) == len(
        load_vectors("decks.json")["cases"])
    assert not [line for line in lines if line.startswith("FAIL")]


def test_the_file_verifies_on_its_own(tmp_path: Path) -> None:
    pyz = tmp_path / bundle.NAME
    pyz.write_bytes(bundle.build())
    done = _standalone(pyz, "vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("vectors passed")
    vectors = load_vectors("hand.json")
    record = tmp_path / "hand.json"
    record.write_text(json.dumps(vectors["record"]))
    done = _standalone(pyz, "hand", str(record), "--key", vectors["public_key"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS  replay" in done.stdout and "WARN  key" not in done.stdout
    # one record: its seed's place in the table's seed chain is the chain command's
    assert "WARN  seed-chain  not checked from one record" in done.stdout
    # a record changed by one card fails there too
    tampered = vectors["record"] | {"seed": "00" * 32}
    record.write_text(json.dumps(tampered))
    assert _standalone(pyz, "hand", str(record), cwd=tmp_path).returncode == 1
    # what ran came from the file, and nothing of the server was there to import
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(pyz)!r})\n"
        "import truco, verifier.cli\n"
        "print(truco.__file__, verifier.cli.__file__)\n"
        "try:\n    import server\nexcept ImportError:\n    print('no server')\n")
    site = str(Path(nacl.__file__).resolve().parent.parent)
    done = subprocess.run([sys.executable, "-S", str(probe)], capture_output=True, text=True,
                          cwd=tmp_path, env={"PYTHONPATH": site})
    assert done.returncode == 0, done.stderr
    where, verifier_at, last = done.stdout.split()[0], done.stdout.split()[1], done.stdout
    assert where.startswith(str(pyz)) and verifier_at.startswith(str(pyz))
    assert last.strip().endswith("no server")


async def test_the_house_serves_it_with_the_hash_its_page_shows(
        make_app: AppFactory, aiohttp_client: Callable[..., Any]) -> None:
    client = await aiohttp_client(make_app())
    resp = await client.get(f"/downloads/{bundle.NAME}")
    assert resp.status == 200 and resp.content_type == "application/zip"
    data = await resp.read()
    assert data == bundle.build()
    digest = hashlib.sha256(data).hexdigest()
    assert resp.headers["ETag"] == f'"{digest}"'
    assert bundle.NAME in resp.headers["Content-Disposition"]
    page = await (await client.get("/verificador")).text()
    assert f'<code id="verifier-sha256" class="hex">{digest}</code>' in page
    assert f'href="/downloads/{bundle.NAME}"' in page
    assert "python3 -m verifier.bundle" in page
    # every page's footer leads there
    home = await (await client.get("/")).text()
    assert 'href="/verificador"' in home


async def test_a_hand_page_has_one_address(
        make_app: AppFactory, aiohttp_client: Callable[..., Any]) -> None:
    # `/h/<table>/02` showed the page of hand 2 and then could not find hand "02"
    client = await aiohttp_client(make_app())
    resp = await client.get("/h/0123456789abcdef/02", allow_redirects=False)
    assert resp.status == 301 and resp.headers["Location"] == "/h/0123456789abcdef/2"
    page = await client.get("/h/0123456789abcdef/2", allow_redirects=False)
    assert page.status == 404  # no such hand here: the page says so (its script), as its status
    # its offline command says where the verifier comes from and how to run the downloaded file
    offline = (await page.text()).split('id="offline-how"', 1)[1].split("</p>", 1)[0]
    assert 'href="/verificador"' in offline and f"verificador/bin/python {bundle.NAME}" in offline
    # the command counts seats from 0, the page from 1: said where the commands are given
    assert "o <code>seat 0</code> dele é o lugar 1 desta página" in " ".join(offline.split())


async def test_the_lobby_says_before_a_table_is_made_that_its_hands_are_public(
        client: TestClient) -> None:  # type: ignore[type-arg]
    # a private table's hands, covered cards too, are public records: nobody is told otherwise
    await signup(client, "ana")
    page = await (await client.get("/")).text()
    assert 'id="records-public"' in page and "registro público, com todas as" in page


def test_a_bundle_that_cannot_be_written_is_one_line_exit_2(tmp_path: Path,
                                                            capsys: Any) -> None:
    # a review gave a folder that does not exist, and a folder: tracebacks
    for out in (tmp_path / "nowhere" / "v.pyz", tmp_path):
        assert bundle.main([str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"verifier.bundle: cannot write {out}: ") and "Traceback" not in err
        assert len(err.splitlines()) == 1
