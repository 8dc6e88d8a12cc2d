"""keep-operator on the real control plane: the chart and the manifests, CEL validation, the
operator running in a pod with its chart's ServiceAccount, and the KeepClusters it manages
(keep-server pods as local processes on 127.x addresses, see README.md), including scaling a
cluster up and down under writes with nothing lost."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import redis
from k8stest import wait_for

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "keep"
MANIFESTS = REPO / "manifests"
BIN = REPO / "build" / "bin"
OP_NS = "keep-operator-e2e"
RELEASE = "keep"
SA = f"{RELEASE}-operator"




@pytest.fixture(scope="module")
def operator(k8s_cluster):
    """The chart installed by helm; the operator runs as a pod (image keep/keep-operator ->
    build/bin/keep-operator) with the chart's ServiceAccount."""
    c = k8s_cluster
    assert (BIN / "keep-operator").exists(), "build keep-operator first"
    c.helm("install", RELEASE, CHART, "-n", OP_NS, "--create-namespace", "--wait",
           "--timeout", "90s", timeout=150)
    try:
        pod = wait_for(lambda: ready_pods(c, OP_NS, "app.kubernetes.io/name=keep-operator"),
                       timeout=60, what="the operator pod Ready")[0]
        yield pod
    finally:
        log = operator_log(c)
        c.helm("uninstall", RELEASE, "-n", OP_NS, "--wait", "--timeout", "60s", check=False)
        c.kubectl("delete", "namespace", OP_NS, "--wait=false", check=False)
        print(f"\n--- operator log tail ---\n{log[-3000:]}")


def operator_log(c):
    p = c.kubectl("logs", "-n", OP_NS, "-l", "app.kubernetes.io/name=keep-operator",
                  "--tail", "200", check=False)
    return p.stdout + p.stderr


def ready_pods(c, ns, selector, count=1):
    items = c.get("pods", namespace=ns, selector=selector)["items"]
    ready = [p for p in items
             if p["status"].get("phase") == "Running"
             and any(x["type"] == "Ready" and x["status"] == "True"
                     for x in p["status"].get("conditions", []))]
    return ready if len(ready) == count else None


def apply(c, ns, obj, check=True):
    return c.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(obj), check=check)


def keep_cluster(name, **spec):
    return {"apiVersion": "keep.dev/v1alpha1", "kind": "KeepCluster",
            "metadata": {"name": name}, "spec": spec}


def running_pods(c, ns, name, count):
    items = c.get("pods", namespace=ns, selector=f"keep.dev/cluster={name}")["items"]
    running = [p for p in items if p["status"].get("phase") == "Running"
               and p["status"].get("podIP")]
    return sorted(running, key=lambda p: p["metadata"]["name"]) if len(running) == count else None


def kc_status(c, ns, name):
    return c.get("keepcluster", name, ns).get("status", {})


def condition(status, ctype):
    return next((x for x in status.get("conditions", []) if x["type"] == ctype), {})


# ---------------------------------------------------------------------------------------------
# Chart and manifests


def test_chart_lint_template_and_manifests(k8s_cluster):
    c = k8s_cluster
    lint = c.helm("lint", CHART, "--strict")
    assert "0 chart(s) failed" in lint.stdout, lint.stdout
    out = c.helm("template", RELEASE, CHART, "-n", OP_NS).stdout
    kinds = [line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("kind:")]
    assert sorted(kinds) == ["ClusterRole", "ClusterRoleBinding", "Deployment", "Role",
                             "RoleBinding", "ServiceAccount"], kinds
    mon = c.helm("template", RELEASE, CHART, "--set", "serviceMonitor.enabled=true",
                 "--set", "prometheusRule.enabled=true", "--set", "watchNamespace=apps").stdout
    for kind in ("ServiceMonitor", "PrometheusRule", "Service"):
        assert f"kind: {kind}\n" in mon, kind
    assert "kind: ClusterRole\n" not in mon  # a watched namespace gets a Role only
    # The plain manifests are what the chart renders.
    check = subprocess.run([str(MANIFESTS / "generate.sh"), "--check"], env=c.env,
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr
    # ...and the API server accepts them (its namespace must exist for a server dry run).
    c.kubectl("create", "namespace", "keep-system", check=False)
    try:
        dry = c.kubectl("apply", "--dry-run=server", "-f", MANIFESTS)
        assert "customresourcedefinition.apiextensions.k8s.io/keepclusters.keep.dev" in dry.stdout
        assert "deployment.apps/keep-operator" in dry.stdout, dry.stdout
    finally:
        c.kubectl("delete", "namespace", "keep-system", "--wait=false", check=False)


# ---------------------------------------------------------------------------------------------
# CEL validation


INVALID = [
    ({"shards": 0}, "shards must be at least 1"),
    ({"members": 0}, "members must be at least 1"),
    ({"shards": 2, "cpuPinning": True, "resources": {"cpu": 3, "memory": "1Gi"}},
     "cpuPinning needs integer CPUs equal to shards"),
    ({"shards": 1, "cpuPinning": True, "resources": {"cpu": "1500m", "memory": "1Gi"}},
     "cpuPinning needs integer CPUs equal to shards"),
    ({"shards": 2, "cpuPinning": True}, "cpuPinning needs resources.memory"),
    ({"hugePages": {"size": "4Mi", "amount": "64Mi"}, "resources": {"memory": "1Gi"}},
     "hugePages.size must be 2Mi or 1Gi"),
    ({"hugePages": {"size": "2Mi", "amount": "64Mi"}}, "hugePages needs resources.memory"),
]


def test_cel_rejects_invalid_clusters(operator, k8s_cluster, namespace):
    c, ns = k8s_cluster, namespace
    for spec, message in INVALID:
        p = apply(c, ns, keep_cluster("bad", **spec), check=False)
        assert p.returncode != 0, f"{spec} was accepted"
        assert message in p.stderr, (spec, p.stderr)
    # Valid pinning: integer CPUs equal to shards.
    ok = keep_cluster("pinned", shards=2, cpuPinning=True, members=1,
                      resources={"cpu": 2, "memory": "64Mi"})
    c.kubectl("apply", "--dry-run=server", "-n", ns, "-f", "-", input=json.dumps(ok))
    # slotHash is immutable.
    apply(c, ns, keep_cluster("hash", members=1, slotHash="crc16"))
    p = c.kubectl("patch", "keepcluster", "hash", "-n", ns, "--type=merge",
                  "-p", '{"spec":{"slotHash":"keyed"}}', check=False)
    assert p.returncode != 0 and "slotHash is immutable" in p.stderr, p.stderr
    # Defaults are applied by the API server.
    spec = c.get("keepcluster", "hash", ns)["spec"]
    assert spec["shards"] == 1 and spec["cpuPinning"] is False and spec["image"]


# ---------------------------------------------------------------------------------------------
# A three-member cluster


def test_three_member_cluster(operator, k8s_cluster, namespace):
    c, ns = k8s_cluster, namespace
    apply(c, ns, keep_cluster("kv", members=3, shards=2, image="keep/keep-server"))
    t0 = time.monotonic()
    pods = wait_for(lambda: running_pods(c, ns, "kv", 3), timeout=60, what="3 keep pods Running")
    assert [p["metadata"]["name"] for p in pods] == ["kv-0", "kv-1", "kv-2"]

    # Owned objects, each with the KeepCluster as controller owner.
    uid = c.get("keepcluster", "kv", ns)["metadata"]["uid"]
    for kind, name in [("statefulset", "kv"), ("service", "kv"), ("service", "kv-headless"),
                       ("configmap", "kv-config"), ("secret", "kv-secrets"),
                       ("poddisruptionbudget", "kv")]:
        obj = json.loads(c.kubectl("get", kind, name, "-n", ns, "-o", "json",
                                   "--show-managed-fields").stdout)
        owner = obj["metadata"]["ownerReferences"][0]
        assert owner["uid"] == uid and owner["controller"] is True, (kind, owner)
        managers = {m["manager"] for m in obj["metadata"].get("managedFields", [])}
        assert "keep-operator" in managers, (kind, managers)
    sts = c.get("statefulset", "kv", ns)
    assert sts["spec"]["updateStrategy"]["type"] == "OnDelete"
    container = sts["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "admin",
                                                      "scheme": "HTTP"}
    assert "--bind=$(POD_IP)" in container["args"]
    assert c.get("service", "kv-headless", ns)["spec"]["clusterIP"] == "None"
    assert c.get("poddisruptionbudget", "kv", ns)["spec"]["maxUnavailable"] == 1
    secret = c.get("secret", "kv-secrets", ns)["data"]
    assert set(secret) == {"secret", "peer-secret"}
    members = json.loads(c.get("configmap", "kv-config", ns)["data"]["members.json"])
    assert members["version"] == 1
    assert [m["host"] for m in members["members"]] == [
        f"kv-{i}.kv-headless.{ns}.svc.cluster.local" for i in range(3)]
    assert all(m["shards"] == 2 and m["client_port"] == 7000 for m in members["members"])

    # Status: members with their state; the scale subresource; printer columns; events.
    def status_has_members():
        st = kc_status(c, ns, "kv")
        names = [m["name"] for m in st.get("memberStatuses", [])]
        return st if names == ["kv-0", "kv-1", "kv-2"] and st.get("members") == 3 else None
    st = wait_for(status_has_members, timeout=30, what="status with 3 members")
    assert st["memberListVersion"] == 1
    assert st["observedGeneration"] == c.get("keepcluster", "kv", ns)["metadata"]["generation"]
    st = wait_for(lambda: (s := kc_status(c, ns, "kv")).get("phase") == "Ready" and s,
                  timeout=max(1, 60 - (time.monotonic() - t0)), what="KeepCluster Ready")
    assert condition(st, "Ready")["status"] == "True"
    assert st["readyMembers"] == 3
    assert sum(m["slots"] for m in st["memberStatuses"]) == 16384
    assert all(m["state"] == "serving" for m in st["memberStatuses"])
    # The data plane answers on every pod IP: each member serves the keys of its slots and
    # redirects the others (MOVED to the owner's stable DNS name).
    for p in pods:
        r = redis.Redis(host=p["status"]["podIP"], port=7000, socket_timeout=5)
        assert r.ping()
        owned = None
        for j in range(200):
            key = f"k-{p['metadata']['name']}-{j}".encode()
            try:
                assert r.set(key, b"v")
            except redis.exceptions.ResponseError as e:
                assert str(e).startswith("MOVED ") and ".kv-headless." in str(e), e
                continue
            owned = key
            break
        assert owned is not None, "no key of 200 is served by " + p["metadata"]["name"]
        assert r.get(owned) == b"v"
        r.close()
    scale = json.loads(c.kubectl("get", "keepcluster", "kv", "-n", ns,
                                 "--subresource=scale", "-o", "json").stdout)
    assert scale["spec"]["replicas"] == 3 and scale["status"]["replicas"] == 3
    assert scale["status"]["selector"] == "app.kubernetes.io/name=keep,keep.dev/cluster=kv"
    table = c.kubectl("get", "kc", "kv", "-n", ns).stdout
    header, row = table.splitlines()[:2]
    assert header.split() == ["NAME", "MEMBERS", "READY", "PHASE", "AGE"], header
    assert row.split()[:2] == ["kv", "3"], row
    events = c.get("events.events.k8s.io", namespace=ns)["items"]
    ours = [e for e in events if e.get("regarding", {}).get("kind") == "KeepCluster"]
    assert {"Creating", "SecretGenerated"} <= {e["reason"] for e in ours}, ours
    assert all(e["reportingController"] == "keep.dev/keep-operator" for e in ours)

    # Deleting the KeepCluster removes everything it owns (garbage collector).
    c.kubectl("delete", "keepcluster", "kv", "-n", ns, "--wait=true", "--timeout=30s")

    def all_gone():
        for kind in ("statefulset", "service", "configmap", "poddisruptionbudget", "pods"):
            if c.get(kind, namespace=ns, selector="keep.dev/cluster=kv")["items"]:
                return False
        return c.kubectl("get", "secret", "kv-secrets", "-n", ns, check=False).returncode != 0
    wait_for(all_gone, timeout=60, what="the cluster's objects and pods deleted")


class PodRouter:
    """Sends a command to the owner of its key through the pods' IPs: follows MOVED (whose
    endpoints are the members' stable DNS names, mapped to the pods' current IPs), retries
    TRYAGAIN/CLUSTERDOWN and a member that went away, bounded in time. A command whose
    connection failed may have run before the failure, so after such a retry `ambiguous` is
    set; `trace` lists the attempts of the last call (for a failure's message)."""

    def __init__(self, c, ns, name, timeout=30.0):
        self.c, self.ns, self.name, self.timeout = c, ns, name, timeout
        self.ips: dict[str, str] = {}
        self.conns: dict[str, redis.Redis] = {}
        self.by_key: dict[bytes, str] = {}
        self.ambiguous = False
        self.trace: list[str] = []

    def refresh(self):
        items = self.c.get("pods", namespace=self.ns,
                           selector=f"keep.dev/cluster={self.name}")["items"]
        self.ips = {p["metadata"]["name"]: p["status"]["podIP"] for p in items
                    if p["status"].get("podIP") and p["status"].get("phase") == "Running"}

    def _conn(self, pod):
        if pod not in self.conns:
            self.conns[pod] = redis.Redis(host=self.ips[pod], port=7000, socket_timeout=5,
                                          socket_connect_timeout=2)
        return self.conns[pod]

    def call(self, key, *args):
        start = time.monotonic()
        deadline = start + self.timeout
        pod = self.by_key.get(key)
        last = None
        self.ambiguous, self.trace = False, []
        while True:
            if not self.ips or (pod is not None and pod not in self.ips):
                self.refresh()  # a kubectl call: only when a pod is unknown
            if pod not in self.ips:
                pod = (sorted(self.ips) or [None])[0]
            try:
                if pod is None:
                    raise redis.exceptions.ConnectionError("no pod running")
                reply = self._conn(pod).execute_command(*args)
                self.by_key[key] = pod
                self.trace.append(f"{time.monotonic() - start:.3f}s {pod}: {reply!r}")
                return reply
            except redis.exceptions.ResponseError as e:
                self.trace.append(f"{time.monotonic() - start:.3f}s {pod}: {e}")
                # redis-py's cluster parser strips the prefix into MovedError & co; the plain one
                # keeps the whole text.
                text = str(e)
                if isinstance(e, redis.exceptions.MovedError):
                    text = f"MOVED {e.slot_id} {e.host}:{e.port}"
                elif isinstance(e, redis.exceptions.TryAgainError):
                    text = "TRYAGAIN"
                elif isinstance(e, redis.exceptions.ClusterDownError):
                    text = "CLUSTERDOWN"
                if text.startswith("MOVED "):
                    # NAME-N.NAME-headless.NS.svc.cluster.local:7000
                    pod = text.split()[2].split(".")[0]
                    continue
                if not (text.startswith("TRYAGAIN") or text.startswith("CLUSTERDOWN")):
                    raise
                last = text
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as e:
                self.trace.append(f"{time.monotonic() - start:.3f}s {pod}: {e!r}")
                self.ambiguous = self.ambiguous or pod is not None
                self.conns.pop(pod, None)
                # The pod may be back under its name at a new IP: look the pods up again.
                pod, last, self.ips = None, e, {}
            if time.monotonic() > deadline:
                raise AssertionError(f"{args!r}: no answer within {self.timeout}s ({last!r})")
            time.sleep(0.02)

    def close(self):
        for r in self.conns.values():
            r.close()


def member_phase(ip, timeout=1.0):
    try:
        with urllib.request.urlopen(f"http://{ip}:7002/v1/cluster", timeout=timeout) as r:
            return json.loads(r.read())["phase"]
    except (OSError, ValueError):
        return None


def test_scale_rolling_update_and_operator_restart_under_writes_lose_nothing(
        operator, k8s_cluster, namespace):
    """Under a steady writer (acknowledged values recorded) and a lock user: scale 3 -> 5 -> 3
    with the operator killed in the middle of the scale-down handoff (it resumes from the
    KeepCluster's status), then a rolling update (a changed setting). The operator adds and
    removes one member at a time and shrinks the StatefulSet only after the leaving member
    reports `left`; every acknowledged write is still there with its last value, and no two
    holders of a lock overlapped."""
    c, ns = k8s_cluster, namespace
    apply(c, ns, keep_cluster("sc", members=3, shards=1, image="keep/keep-server"))
    wait_for(lambda: kc_status(c, ns, "sc").get("phase") == "Ready", timeout=90,
             what="KeepCluster Ready with 3 members")

    acknowledged: dict[bytes, int] = {}
    writes = [0]
    errors: list[str] = []
    holds: list[tuple[str, int, float, float]] = []  # (lock, token, acquired, released)
    shrinks: list[tuple[int, int, str, bool]] = []  # (from, to, removed, it had left before)
    stop = threading.Event()

    def writer():
        router = PodRouter(c, ns, "sc", timeout=60)
        i = 0
        try:
            while not stop.is_set():
                key = f"w:{i % 2000}".encode()
                router.call(key, "SET", key, str(i))
                acknowledged[key] = i
                writes[0] += 1
                i += 1
        except Exception as e:  # noqa: BLE001 - reported by the test
            errors.append(f"writer: {e!r}")
        finally:
            router.close()

    def locker(owner: bytes):
        """Two of these contend for 4 locks; each hold is recorded with its fencing token
        (acquired after LOCK answered, released before UNLOCK was sent)."""
        router = PodRouter(c, ns, "sc", timeout=90)
        i = 0
        try:
            while not stop.is_set():
                name = f"lock:{i % 4}".encode()
                token = router.call(name, "LOCK", name, owner, 30000)
                if token is None:  # the other locker holds it
                    i += 1
                    continue
                acquired = time.monotonic()
                time.sleep(0.005)
                released = time.monotonic()
                unlocked = router.call(name, "UNLOCK", name, owner)
                # 0 is right only for an UNLOCK that may have run before a retry, or that came
                # after the 30 s lease; the overlap check below covers the hold either way.
                if unlocked != 1 and not router.ambiguous and time.monotonic() - acquired < 30:
                    raise AssertionError(
                        f"UNLOCK {name!r} by {owner!r} (token {token}) answered {unlocked!r}: "
                        f"{router.trace}")
                holds.append((name.decode(), token, acquired, released))
                i += 1
        except Exception as e:  # noqa: BLE001 - reported by the test
            errors.append(f"locker: {e!r}")
        finally:
            router.close()

    left_at: dict[str, float] = {}  # member -> when it was first seen reporting `left`
    watch_proc: list[subprocess.Popen] = []

    def watch_shrinks():
        """Streams the StatefulSet (kubectl --watch) and records every shrink with the time it
        was seen, and whether the removed member had reported `left` before it."""
        proc = subprocess.Popen(
            ["kubectl", "get", "statefulset", "sc", "-n", ns, "--watch", "--output-watch-events",
             "-o", "jsonpath={.object.spec.replicas}{\"\\n\"}"],
            env=c.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        watch_proc.append(proc)
        replicas = None
        try:
            for line in proc.stdout:
                if stop.is_set():
                    break
                if not line.strip().isdigit():
                    continue
                now = int(line)
                if replicas is not None and now < replicas:
                    for gone in range(now, replicas):
                        name = f"sc-{gone}"
                        shrinks.append((replicas, now, name, name in left_at))
                replicas = now
        finally:
            proc.kill()

    def watch_phase(name):
        """Polls one member a scale-down to 3 removes, every 5 ms, for `left`. A member is `left`
        only briefly before the operator shrinks the StatefulSet, so each has its own poller and
        pod IPs come from a thread of their own (a kubectl call takes hundreds of milliseconds on
        a loaded machine)."""
        while not stop.is_set() and name not in left_at:
            ip = pod_ips.get(name)
            if ip and member_phase(ip, timeout=0.2) == "left":
                left_at[name] = time.monotonic()
            time.sleep(0.005)

    pod_ips: dict[str, str] = {}

    def refresh_pod_ips():
        while not stop.is_set():
            try:
                pods = c.get("pods", namespace=ns, selector="keep.dev/cluster=sc")["items"]
                pod_ips.update({x["metadata"]["name"]: x["status"]["podIP"] for x in pods
                                if x["status"].get("podIP")})
            except Exception:  # noqa: BLE001 - the next refresh tries again
                pass
            stop.wait(0.3)

    threads = [threading.Thread(target=writer, daemon=True),
               threading.Thread(target=locker, args=(b"locker-a",), daemon=True),
               threading.Thread(target=locker, args=(b"locker-b",), daemon=True),
               threading.Thread(target=watch_shrinks, daemon=True),
               threading.Thread(target=refresh_pod_ips, daemon=True),
               threading.Thread(target=watch_phase, args=("sc-3",), daemon=True),
               threading.Thread(target=watch_phase, args=("sc-4",), daemon=True)]
    for t in threads:
        t.start()

    def ready_with(members):
        def check():
            st = kc_status(c, ns, "sc")
            names = [m["name"] for m in st.get("memberStatuses", [])]
            ok = (st.get("phase") == "Ready" and st.get("members") == members
                  and not st.get("operation")
                  and names == [f"sc-{i}" for i in range(members)]
                  and sum(m["slots"] for m in st["memberStatuses"]) == 16384)
            return st if ok else None
        return check

    def progress():
        while not stop.is_set():
            print(f"[progress] writes={writes[0]} keys={len(acknowledged)} holds={len(holds)} "
                  f"shrinks={shrinks} errors={errors[:2]}", flush=True)
            stop.wait(5)
    threads.append(threading.Thread(target=progress, daemon=True))
    threads[-1].start()
    try:
        wait_for(lambda: len(acknowledged) >= 2000 or errors, timeout=90,
                 what="the writer to warm up")
        assert not errors, errors
        c.kubectl("patch", "keepcluster", "sc", "-n", ns, "--type=merge",
                  "-p", json.dumps({"spec": {"members": 5}}))
        wait_for(ready_with(5), timeout=240, what="KeepCluster Ready with 5 members")
        print(f"\nscaled to 5: {writes[0]} writes acknowledged")

        # 5 -> 1 in one change would drop below a majority of the list: refused, with a reason.
        c.kubectl("patch", "keepcluster", "sc", "-n", ns, "--type=merge",
                  "-p", json.dumps({"spec": {"members": 1}}))
        refused = wait_for(lambda: (d := condition(kc_status(c, ns, "sc"), "Degraded"))
                           .get("reason") == "ScaleRefused" and d, timeout=60,
                           what="the 5 -> 1 scale-down refused")
        assert "majority (3)" in refused["message"], refused
        assert len(running_pods(c, ns, "sc", 5) or []) == 5
        # Scale down, and kill the operator (SIGKILL of its process, as a crash) the moment the
        # first leaving member reports `leaving`, i.e. during its handoff: the restarted operator
        # resumes from the KeepCluster's status (status.operation). 20 MB of 20 KB values make a
        # member's handoff last long enough for the kill to land inside it.
        preload = PodRouter(c, ns, "sc")
        try:
            for i in range(1000):
                key = f"big:{i}".encode()
                preload.call(key, "SET", key, b"b" * 20000)
        finally:
            preload.close()
        op_pod = wait_for(lambda: ready_pods(c, OP_NS, "app.kubernetes.io/name=keep-operator"),
                          timeout=30, what="the operator pod")[0]["metadata"]["name"]
        op_pid = c.container_pid(OP_NS, op_pod)
        leaver_ip = next(p["status"]["podIP"] for p in running_pods(c, ns, "sc", 5)
                         if p["metadata"]["name"] == "sc-4")
        c.kubectl("patch", "keepcluster", "sc", "-n", ns, "--type=merge",
                  "-p", json.dumps({"spec": {"members": 3}}))
        deadline = time.monotonic() + 60
        while member_phase(leaver_ip) not in ("leaving", "left"):
            assert time.monotonic() < deadline, "sc-4 never started leaving"
            time.sleep(0.002)
        os.kill(op_pid, signal.SIGKILL)
        killed_in = member_phase(leaver_ip)
        print(f"operator killed while sc-4 was {killed_in}")

        def operator_restarted():
            p = c.get("pod", op_pod, OP_NS)
            s = p["status"]["containerStatuses"][0]
            return s["restartCount"] >= 1 and s["ready"]
        wait_for(operator_restarted, timeout=90, what="the operator restarted and Ready")
        wait_for(ready_with(3), timeout=240, what="KeepCluster Ready with 3 members")
        print(f"scaled to 3: {writes[0]} writes acknowledged")

        # Rolling update: a changed setting changes the pod template; members are replaced one
        # at a time (leave, new pod, rejoin).
        revision = c.get("statefulset", "sc", ns)["status"].get("updateRevision")
        c.kubectl("patch", "keepcluster", "sc", "-n", ns, "--type=merge",
                  "-p", json.dumps({"spec": {"maxmemory": "512mb"}}))

        def rolled():
            sts = c.get("statefulset", "sc", ns)
            new = sts["status"].get("updateRevision")
            pods = c.get("pods", namespace=ns, selector="keep.dev/cluster=sc")["items"]
            done = (new != revision and len(pods) == 3 and all(
                p["metadata"]["labels"].get("controller-revision-hash") == new for p in pods))
            return done and ready_with(3)()
        wait_for(rolled, timeout=300, what="every member replaced with the new template")
        print(f"rolled: {writes[0]} writes acknowledged")
        assert not errors, errors
    finally:
        stop.set()
        for proc in watch_proc:
            proc.kill()
        for t in threads:
            t.join(timeout=120)
    assert not errors, errors

    router = PodRouter(c, ns, "sc")
    try:
        wrong = [(k, v) for k, v in acknowledged.items()
                 if router.call(k, "GET", k) != str(v).encode()]
    finally:
        router.close()
    assert not wrong, f"{len(wrong)} of {len(acknowledged)} keys lost or stale: {wrong[:5]}"
    # No two holds of a lock overlapped, and each lock's tokens increased.
    by_lock: dict[str, list] = {}
    for name, token, acquired, released in holds:
        by_lock.setdefault(name, []).append((acquired, released, token))
    for name, spans in by_lock.items():
        spans.sort()
        for (a1, r1, t1), (a2, r2, t2) in zip(spans, spans[1:]):
            assert r1 <= a2 and t2 > t1, (name, (a1, r1, t1), (a2, r2, t2))
    # The StatefulSet shrank to 3 one member at a time, never below, and each removed member
    # had reported `left` (polled every 10 ms) before the shrink was streamed.
    removed = sorted(name for _, _, name, _ in shrinks)
    assert removed == ["sc-3", "sc-4"] and all(b >= 3 for _, b, _, _ in shrinks), shrinks
    assert all(was_left for _, _, _, was_left in shrinks), shrinks
    print(f"shrinks (from, to, removed, had reported left): {shrinks}")
    print(f"{writes[0]} writes, {len(acknowledged)} keys checked, {len(holds)} lock holds")
    big = PodRouter(c, ns, "sc")
    try:
        assert all(big.call(f"big:{i}".encode(), "STRLEN", f"big:{i}") == 20000
                   for i in range(1000))
    finally:
        big.close()
    c.kubectl("delete", "keepcluster", "sc", "-n", ns, "--wait=true", "--timeout=60s")


def test_pinning_and_huge_pages(operator, k8s_cluster, namespace):
    c, ns = k8s_cluster, namespace
    apply(c, ns, keep_cluster("pin", members=2, shards=2, cpuPinning=True,
                              image="keep/keep-server",
                              resources={"cpu": 2, "memory": "256Mi"},
                              hugePages={"size": "2Mi", "amount": "64Mi"}))
    # Ready, not just Running: a Running pod's process may not listen yet.
    pods = wait_for(lambda: ready_pods(c, ns, "keep.dev/cluster=pin", 2), timeout=60,
                    what="2 pinned pods Ready")
    for p in sorted(pods, key=lambda p: p["metadata"]["name"]):
        assert p["status"]["qosClass"] == "Guaranteed", p["status"].get("qosClass")
        res = p["spec"]["containers"][0]["resources"]
        assert res["requests"]["cpu"] == res["limits"]["cpu"] == "2"
        assert res["requests"]["memory"] == res["limits"]["memory"] == "256Mi"
        assert res["requests"]["hugepages-2Mi"] == res["limits"]["hugepages-2Mi"] == "64Mi"
        vols = {v["name"]: v for v in p["spec"]["volumes"]}
        assert vols["hugepages"]["emptyDir"] == {"medium": "HugePages"}
        mounts = {m["name"]: m["mountPath"] for m in p["spec"]["containers"][0]["volumeMounts"]}
        assert mounts["hugepages"] == "/dev/hugepages"
        assert "--pin=auto" in p["spec"]["containers"][0]["args"]
        r = redis.Redis(host=p["status"]["podIP"], port=7000, socket_timeout=5)
        assert r.ping()
        r.close()


def test_irq_affinity_daemonset_follows_the_spec(operator, k8s_cluster, namespace):
    c, ns = k8s_cluster, namespace
    # The tuner image is deliberately unmapped: on this testbed a DaemonSet pod would run on
    # the host itself, and the tuner writes the host's /proc/irq. Only the objects are checked.
    apply(c, ns, keep_cluster("irq", members=1, image="keep/keep-server",
                              irqAffinity={"mode": "onto", "interface": "eth0",
                                           "tunerImage": "keep/keep-node-tuner-unmapped"}))
    ds = wait_for(lambda: c.get("daemonsets", namespace=ns)["items"], timeout=30,
                  what="the node tuner DaemonSet")[0]
    assert ds["metadata"]["name"] == "irq-node-tuner"
    tuner = ds["spec"]["template"]["spec"]["containers"][0]
    assert tuner["securityContext"]["privileged"] is True
    assert "--mode=onto" in tuner["args"] and "--interface=eth0" in tuner["args"]
    role = c.get("role", "irq-node-tuner", ns)
    assert role["rules"][0]["resources"] == ["pods"]
    c.kubectl("patch", "keepcluster", "irq", "-n", ns, "--type=json",
              "-p", '[{"op":"remove","path":"/spec/irqAffinity"}]')
    wait_for(lambda: not c.get("daemonsets", namespace=ns)["items"], timeout=30,
             what="the DaemonSet removed when irqAffinity is dropped")


# ---------------------------------------------------------------------------------------------
# The operator itself


def test_operator_runs_with_its_service_account_and_least_privilege(operator, k8s_cluster):
    c = k8s_cluster
    pod = c.get("pods", namespace=OP_NS, selector="app.kubernetes.io/name=keep-operator")["items"][0]
    assert pod["spec"]["serviceAccountName"] == SA
    as_sa = ["--as", f"system:serviceaccount:{OP_NS}:{SA}"]

    def can(*args):
        return c.kubectl("auth", "can-i", *args, *as_sa, check=False).stdout.strip() == "yes"
    assert can("patch", "statefulsets.apps", "-n", "anywhere")
    assert can("watch", "keepclusters.keep.dev", "-A")
    assert can("patch", "keepclusters.keep.dev", "--subresource=status", "-n", "x")
    assert can("create", "events.events.k8s.io", "-n", "x")
    assert can("update", "leases.coordination.k8s.io", "-n", OP_NS)
    assert not can("update", "leases.coordination.k8s.io", "-n", "default")
    assert not can("list", "secrets", "-n", "x")
    assert not can("delete", "secrets", "-n", "x")
    assert not can("get", "nodes")
    assert not can("create", "clusterroles")
    assert not can("patch", "keepclusters.keep.dev", "-n", "x")  # spec is the user's
    # It holds the leader Lease, serves its metrics, and talks to the API server in-cluster.
    lease = c.get("lease", "keep-operator", OP_NS)
    assert lease["spec"]["holderIdentity"].startswith(pod["metadata"]["name"] + "_")
    ip = pod["status"]["podIP"]
    body = urllib.request.urlopen(f"http://{ip}:8080/metrics", timeout=5).read().decode()
    assert "keep_operator_reconcile_total" in body
    assert re.search(r"^keep_operator_leader 1(\.0*)?$", body, re.M), body
    assert urllib.request.urlopen(f"http://{ip}:8080/readyz", timeout=5).status == 200
    assert "server https://127.0.0.1" in operator_log(c)


# ---------------------------------------------------------------------------------------------
# The operator's Grafana dashboard against a real Prometheus scraping the operator pod


def test_operator_dashboard_expressions_return_data(operator, k8s_cluster, namespace,
                                                    tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from helpers.prometheus import Prometheus, dashboard_expressions

    c, ns = k8s_cluster, namespace
    apply(c, ns, keep_cluster("dash", members=1, shards=1, image="keep/keep-server"))
    wait_for(lambda: running_pods(c, ns, "dash", 1), timeout=60, what="a keep pod Running")
    pod = c.get("pods", namespace=OP_NS, selector="app.kubernetes.io/name=keep-operator")["items"][0]
    prometheus = Prometheus(tmp_path, [f"{pod['status']['podIP']}:8080"], job="keep-operator")
    try:
        expressions = dashboard_expressions(("operator.json",))

        missing: list[str] = []

        def check():
            missing[:] = [f"{title}: {expr}" for _, title, expr in expressions
                          if not prometheus.query(expr)["data"]["result"]]
            return not missing
        # rate() needs two scrapes a reconcile apart: wait (bounded) until every panel has data.
        try:
            wait_for(check, timeout=40, what="every operator panel to return data")
        except Exception:
            raise AssertionError("panels without data:\n" + "\n".join(missing)) from None
    finally:
        prometheus.close()
