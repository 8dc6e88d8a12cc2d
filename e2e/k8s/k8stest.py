"""Helpers for the e2e Kubernetes tests (imported by conftest.py and the tests)."""

import json
import shlex
import subprocess
import time
from pathlib import Path


class Cluster:
    def __init__(self, env: dict):
        self.env = env
        self.state = Path(env["KEEP_E2E_STATE"])
        self.dns = env["KEEP_E2E_DNS"]

    def run(self, *args, input=None, check=True, timeout=120):
        p = subprocess.run([str(a) for a in args], env=self.env, input=input, capture_output=True,
                           text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError(f"{shlex.join(map(str, args))} failed ({p.returncode}):\n"
                                 f"{p.stdout}\n{p.stderr}")
        return p

    def kubectl(self, *args, **kw):
        return self.run("kubectl", *args, **kw)

    def helm(self, *args, **kw):
        return self.run("helm", *args, **kw)

    def get(self, kind, name=None, namespace=None, selector=None):
        args = ["get", kind] + ([name] if name else []) + ["-o", "json"]
        if namespace:
            args += ["-n", namespace]
        if selector:
            args += ["-l", selector]
        return json.loads(self.kubectl(*args).stdout)

    def container_pid(self, namespace, pod, container=None):
        """PID of a running container's process (for kill -9 / SIGSTOP tests), or None."""
        p = self.get("pod", pod, namespace)
        container = container or p["spec"]["containers"][0]["name"]
        f = self.state / "agent" / "pods" / p["metadata"]["uid"] / f"pid-{container}"
        try:
            return int(f.read_text())
        except (OSError, ValueError):
            return None

    def exec_in(self, namespace, pod, *cmd, container=None, check=True, timeout=60):
        """Run cmd inside a running container's mount and UTS namespaces with its environment
        (a stand-in for `kubectl exec`, which the node agent does not serve)."""
        pid = self.container_pid(namespace, pod, container)
        assert pid, f"{namespace}/{pod}: no running container"
        raw = Path(f"/proc/{pid}/environ").read_bytes()
        env = dict(kv.split("=", 1) for kv in raw.decode(errors="replace").split("\0") if "=" in kv)
        p = subprocess.run(["nsenter", "-t", str(pid), "-m", "-u", "--", *map(str, cmd)], env=env,
                           capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError(f"exec in {namespace}/{pod} {cmd} failed ({p.returncode}):\n"
                                 f"{p.stdout}\n{p.stderr}")
        return p

    def log_tail(self, component, lines=40):
        f = self.state / "logs" / f"{component}.log"
        return "".join(f.read_text(errors="replace").splitlines(True)[-lines:]) if f.exists() else ""


def wait_for(fn, timeout=60, interval=0.2, what="condition"):
    """Poll fn() until it returns a truthy value (returned); AssertionError after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            v = fn()
            if v:
                return v
            last = v
        except Exception as e:  # noqa: BLE001 - keep polling, report the last error
            last = e
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")
        time.sleep(interval)


def parse_env(text: str) -> dict:
    env = {}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("export "):
            continue
        for tok in shlex.split(line[len("export "):]):
            k, _, v = tok.partition("=")
            env[k] = v
    return env
