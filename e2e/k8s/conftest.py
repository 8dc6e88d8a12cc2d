"""pytest fixtures for the e2e tests on a real Kubernetes control plane.

Run with Debian's interpreter:  /usr/bin/python3 -m pytest e2e/k8s
Fixtures:
  k8s_cluster  (session) builds the tools if needed (build-tools.sh), runs `cluster up` once,
               and on teardown runs `cluster down` and `cluster check` (fails the run if
               anything of the cluster is still running). A watchdog started by `cluster up`
               also tears the cluster down if this pytest process dies.
  namespace    a fresh namespace per test (deleted afterwards; on failure the namespace's
               objects, events and the node agent's log tail are printed first).
Env: KEEP_E2E_SKIP_BUILD=1 skips build-tools.sh; the cluster script's KEEP_E2E_* variables apply.
"""

import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from k8stest import Cluster, parse_env, wait_for

HERE = Path(__file__).resolve().parent
CLUSTER = HERE / "cluster"


@pytest.fixture(scope="session")
def k8s_cluster():
    if os.environ.get("KEEP_E2E_SKIP_BUILD") != "1":
        subprocess.run([str(HERE / "build-tools.sh")], check=True)
    env = dict(os.environ)
    env["KEEP_E2E_WATCH_PID"] = str(os.getpid())
    t0 = time.monotonic()
    up = subprocess.run([str(CLUSTER), "up"], env=env, stdout=subprocess.PIPE, text=True)
    if up.returncode != 0:
        pytest.fail(f"cluster up failed ({up.returncode})")  # `up` tears itself down on failure
    exports = parse_env(up.stdout)
    state = exports["KEEP_E2E_STATE"]
    exports["PATH"] = exports["PATH"].replace("$PATH", os.environ.get("PATH", ""))
    env.pop("KEEP_E2E_WATCH_PID")
    env.update(exports)
    print(f"\ncluster up in {time.monotonic() - t0:.1f}s at {state}", file=sys.stderr)
    cluster = Cluster(env)
    try:
        yield cluster
    finally:
        down_env = dict(os.environ, KEEP_E2E_STATE=state)
        subprocess.run([str(CLUSTER), "down"], env=down_env, check=False)
        check = subprocess.run([str(CLUSTER), "check"], env=down_env, capture_output=True, text=True)
        assert check.returncode == 0, f"processes left running after cluster down:\n{check.stderr}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


@pytest.fixture
def namespace(k8s_cluster, request):
    name = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-")
    name = f"{name}-{uuid.uuid4().hex[:5]}"
    k8s_cluster.kubectl("create", "namespace", name)
    # Pods need the namespace's default ServiceAccount (made by the controller manager).
    wait_for(lambda: k8s_cluster.kubectl("get", "serviceaccount", "default", "-n", name,
                                         check=False).returncode == 0,
             timeout=30, what=f"serviceaccount default in {name}")
    yield name
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        diag = k8s_cluster.kubectl("get", "all,events", "-n", name, "-o", "wide", check=False)
        print(f"\n--- objects in {name} ---\n{diag.stdout}{diag.stderr}", file=sys.stderr)
        print(f"--- node-agent log ---\n{k8s_cluster.log_tail('node-agent')}", file=sys.stderr)
    k8s_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)
