"""The Grafana dashboard (deploy/grafana/tracesets.json) asks only for metrics the service
exposes: every metric name in its PromQL is one a live service's /metrics names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

from tests.flows import inspected, upload
from tests.server import FRESH_CONNECTIONS, ServerProcess

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "tracesets.json"
#: PromQL's own words, and the labels the expressions name: not metrics.
PROMQL = {"sum", "by", "rate", "histogram_quantile", "max", "time", "le", "route", "status"}
PROMQL |= {"via", "reason", "outcome", "instance"}


def _expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def test_every_metric_the_dashboard_reads_is_exposed(local_server: ServerProcess) -> None:
    with httpx.Client(
        base_url=local_server.url,
        headers={"Authorization": f"Bearer {local_server.token}"},
        timeout=60,
        limits=FRESH_CONNECTIONS,
    ) as api:
        made = upload(api, {"rank0.json": b'{"traceEvents": []}'})
        inspected(api, made["id"])  # files inspected are counted
        refused = api.post("/api/v1/tracesets/upload-url", json={"name": "n", "files": []})
        assert refused.status_code == 400  # refusals are counted
    exposed = set()
    for line in httpx.get(f"{local_server.url}/metrics", timeout=60).text.splitlines():
        if line.startswith("# TYPE "):
            name, kind = line.split()[2:4]
            exposed.add(name)
            if kind == "counter":
                exposed.add(f"{name}_total")
            if kind == "histogram":
                exposed |= {f"{name}_bucket", f"{name}_count", f"{name}_sum"}
    expressions = _expressions()
    assert len(expressions) >= 10
    named = set()
    for expression in expressions:
        without_strings = re.sub(r'"[^"]*"|\[\d+m\]', "", expression)
        words = re.findall(r"[a-z_][a-z0-9_]*", without_strings)
        named |= {word for word in words if word not in PROMQL}
    assert named, expressions
    assert named <= exposed, named - exposed
