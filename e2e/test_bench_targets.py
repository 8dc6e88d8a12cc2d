"""`make bench` builds only the binaries the bench scripts run (the Makefile's BENCH_TARGETS), so a
script that starts to run another of the build's programs must name it there too, or a fresh
clone's `make bench` fails on a missing binary. This test reads the scripts for every program the
build makes and checks that each one they name is in the list.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.server import keep_bin

pytestmark = [pytest.mark.keep_only, pytest.mark.timeout(30)]

ROOT = Path(__file__).resolve().parents[1]


def bench_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    m = re.search(r"^BENCH_TARGETS\s*:=\s*(.+)$", makefile, re.MULTILINE)
    assert m, "Makefile has no BENCH_TARGETS"
    return set(m.group(1).split())


def bench_recipe() -> str:
    makefile = (ROOT / "Makefile").read_text()
    m = re.search(r"^bench:.*\n(?:\t.*\n)+", makefile, re.MULTILINE)
    assert m, "Makefile has no bench recipe"
    return m.group(0)


def test_every_program_the_bench_scripts_run_is_a_bench_target():
    targets = bench_targets()
    built = {p.name for p in keep_bin().parent.iterdir()
             if p.is_file() and p.stat().st_mode & 0o111}
    assert targets <= built, f"BENCH_TARGETS names what the build does not make: {targets - built}"
    texts = [bench_recipe()] + [p.read_text() for p in sorted((ROOT / "bench").glob("*.sh"))]
    texts += [p.read_text() for p in sorted((ROOT / "bench").glob("*.py"))]
    named = set()
    for name in built:
        pattern = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
        if any(pattern.search(text) for text in texts):
            named.add(name)
    assert "keep-server" in named and "keep-floor" in named  # the search finds what is there
    assert named <= targets, f"run by the bench but not built by `make bench`: {named - targets}"
