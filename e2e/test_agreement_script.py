"""bench/agreement.sh: two runs' RATIO figures side by side, how far apart each pair is (the larger
over the smaller, so the order of the runs does not matter), grouped into the figures issue 4
judges (named by TARGET lines), the other CPU and throughput figures, and the percentiles. Bad
input (a missing file, no shared figures, a tolerance that is not a number) fails with a message.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.keep_only, pytest.mark.timeout(30)]

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "agreement.sh"

RUN_1 = """\
compare.sh: get_p1            round 1 on keep 1 shard     7.803 us/req, 110445 req/s
RATIO get_p1 cpu_us_per_req keep=7.566 redis=10.982 keep/redis=0.700
RATIO get_p16 cpu_us_per_req keep2=0.724 floor2=0.703 keep2/floor2=1.000
RATIO get_p16 throughput keep=1603083 redis=747463 keep/redis=2.000
RATIO set_open p99_us keep=294.911 redis=438.271 keep/redis=0.600
RATIO mixed cpu_us_per_req keep=7.012 redis=10.567 keep/redis=0.650
RATIO incr cpu_us_per_req keep=n/a redis=10.760 keep/redis=n/a
RATIO only_here cpu_us_per_req keep=1 redis=1 keep/redis=1.000
TARGET get_p1 cpu_us_per_req keep/redis=0.700 <=0.8 met
TARGET get_p16 cpu_us_per_req keep2/floor2=1.000 <=1.2 met
TARGET set_open p99_us keep/redis=0.600 <=1 met
"""

RUN_2 = """\
RATIO get_p1 cpu_us_per_req keep=7.1 redis=11.3 keep/redis=0.630
RATIO get_p16 cpu_us_per_req keep2=0.8 floor2=0.66 keep2/floor2=1.200
RATIO get_p16 throughput keep=1500000 redis=700000 keep/redis=2.100
RATIO set_open p99_us keep=446.463 redis=372.735 keep/redis=1.200
RATIO mixed cpu_us_per_req keep=9.0 redis=10.0 keep/redis=0.900
RATIO incr cpu_us_per_req keep=9.9 redis=10.8 keep/redis=0.913
\x00\xff garbage RATIO line that is not one
TARGET set_open p99_us keep/redis=1.200 <=1 missed
"""


def run(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], env={**os.environ, **env},
                          capture_output=True, text=True, errors="replace", timeout=20)


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_bytes(text.encode("latin-1"))
    return str(path)


def figures(stdout: str) -> dict[str, tuple[float, float, float, bool]]:
    """'workload metric a/b' -> (run 1, run 2, percent apart, beyond)."""
    rows = {}
    for line in stdout.splitlines():
        m = re.fullmatch(r"(\S+ \S+ \S+/\S+) +([0-9.]+) +([0-9.]+) +([0-9.]+)%(  beyond)?", line)
        if m:
            rows[m.group(1)] = (float(m.group(2)), float(m.group(3)), float(m.group(4)),
                                m.group(5) is not None)
    return rows


def test_figures_of_both_runs_are_set_side_by_side_and_grouped(tmp_path):
    one, two = write(tmp_path, "a.log", RUN_1), write(tmp_path, "b.log", RUN_2)
    result = run(one, two)
    assert result.returncode == 0, result.stderr
    rows = figures(result.stdout)
    # Only figures both runs have, with a number on both sides.
    assert set(rows) == {
        "get_p1 cpu_us_per_req keep/redis", "get_p16 cpu_us_per_req keep2/floor2",
        "get_p16 throughput keep/redis", "set_open p99_us keep/redis",
        "mixed cpu_us_per_req keep/redis"}
    assert rows["get_p1 cpu_us_per_req keep/redis"] == (0.7, 0.63, 11.1, False)
    assert rows["get_p16 cpu_us_per_req keep2/floor2"] == (1.0, 1.2, 20.0, True)
    assert rows["get_p16 throughput keep/redis"] == (2.0, 2.1, 5.0, False)
    assert rows["set_open p99_us keep/redis"] == (0.6, 1.2, 100.0, True)
    assert rows["mixed cpu_us_per_req keep/redis"] == (0.65, 0.9, 38.5, True)

    # The TARGET lines of either run name the judged figures; throughput has none here.
    out = result.stdout
    judged = out.index("the figures issue 4 judges")
    level = out.index("the other CPU per request (with its user and system parts) and throughput"
                      " figures")
    tails = out.index("AGREEMENT")  # no percentile group: the only percentile is judged
    assert judged < out.index("get_p1 cpu_us_per_req keep/redis") < level
    assert judged < out.index("set_open p99_us keep/redis") < level
    assert level < out.index("get_p16 throughput keep/redis") < tails
    assert level < out.index("mixed cpu_us_per_req keep/redis") < tails
    assert ("AGREEMENT targets 1 of 3 within 15% (beyond: get_p16 cpu_us_per_req keep2/floor2 "
            "(20.0%); set_open p99_us keep/redis (100.0%))") in out
    assert "AGREEMENT cpu_throughput 1 of 2 within 15%\n" in out
    assert "AGREEMENT percentiles" not in out  # the only percentile here is a judged one


def test_the_order_of_the_runs_does_not_change_how_far_apart_they_are(tmp_path):
    one, two = write(tmp_path, "a.log", RUN_1), write(tmp_path, "b.log", RUN_2)
    forward, backward = figures(run(one, two).stdout), figures(run(two, one).stdout)
    assert forward.keys() == backward.keys()
    for key, (a, b, apart, beyond) in forward.items():
        assert backward[key] == (b, a, apart, beyond), key


def test_the_tolerance_can_be_set(tmp_path):
    one, two = write(tmp_path, "a.log", RUN_1), write(tmp_path, "b.log", RUN_2)
    result = run(one, two, TOLERANCE="0.25")
    assert result.returncode == 0, result.stderr
    rows = figures(result.stdout)
    assert not rows["get_p16 cpu_us_per_req keep2/floor2"][3]  # 20% apart
    assert rows["mixed cpu_us_per_req keep/redis"][3]  # 38.5%
    assert "AGREEMENT targets 2 of 3 within 25%" in result.stdout


def test_bad_input_fails_with_a_message(tmp_path):
    one = write(tmp_path, "a.log", RUN_1)
    result = run(one)
    assert result.returncode == 1 and "usage: agreement.sh RUN1.log RUN2.log" in result.stderr

    result = run(one, str(tmp_path / "missing.log"))
    assert result.returncode == 1 and "cannot read" in result.stderr

    garbage = write(tmp_path, "garbage.log", "\x00\x01\xff" * 100 + "\nRATIO\nRATIO a b c\n")
    result = run(one, garbage)
    assert result.returncode == 1 and "share no RATIO line" in result.stderr

    result = run(one, one, TOLERANCE="15%")
    assert result.returncode == 1 and "is not a number" in result.stderr

    # A run against itself agrees on every figure.
    result = run(one, one)
    assert result.returncode == 0
    assert "AGREEMENT targets 3 of 3 within 15%" in result.stdout
    assert "beyond" not in result.stdout
