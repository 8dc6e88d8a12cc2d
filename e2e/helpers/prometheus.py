"""A real Prometheus (Debian's) for the telemetry suites: scrapes the given targets every second
with the given rule file, answers PromQL through its HTTP API, and is stopped by close()."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

from .cluster import free_port, wait_until

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
TELEMETRY = Path(__file__).resolve().parent.parent.parent / "telemetry"


def dashboard_expressions(names=("node.json", "cluster.json")) -> list[tuple[str, str, str]]:
    """(dashboard, panel title, expression) of every target of the named dashboards."""
    out = []
    for path in sorted(TELEMETRY / "dashboards" / n for n in names):
        for panel in json.loads(path.read_text())["panels"]:
            for target in panel["targets"]:
                out.append((path.name, panel["title"], target["expr"]))
    return out


class Prometheus:
    def __init__(self, work: Path, targets: list[str], rules: Path | None = None,
                 job: str = "keep"):
        self.work = work
        self.port = free_port("127.0.0.1")
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s",
                       "scrape_timeout": "900ms"},
            "rule_files": [str(rules)] if rules else [],
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": targets}]}],
        }
        (work / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        self.log = open(work / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={work / 'prometheus.yml'}",
             f"--storage.tsdb.path={work / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(lambda: self._get("/-/ready", raw=True), 30, 0.1, "prometheus to be ready")

    def _get(self, path: str, raw: bool = False):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
            body = r.read()
        return body if raw else json.loads(body)

    def query(self, expr: str) -> dict:
        return self._get("/api/v1/query?" + urllib.parse.urlencode({"query": expr}))

    def firing(self) -> set[str]:
        alerts = self._get("/api/v1/alerts")["data"]["alerts"]
        return {a["labels"]["alertname"] for a in alerts if a["state"] == "firing"}

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.log.close()
