#!/usr/bin/python3
"""Writes the Grafana dashboards (node.json, cluster.json, operator.json) from the panel lists
below, so every dashboard shares one layout and one `$datasource` variable. Run it after changing
a panel; e2e/test_telemetry.py checks the committed JSON is what this script writes and
evaluates every expression against a real Prometheus."""
import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
DS = {"type": "prometheus", "uid": "${datasource}"}


def panel(title, exprs, unit="short", kind="timeseries", legend="{{instance}}"):
    if isinstance(exprs, str):
        exprs = [(exprs, legend)]
    return {
        "type": kind,
        "title": title,
        "datasource": DS,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {"refId": chr(ord("A") + i), "datasource": DS, "expr": e, "legendFormat": l}
            for i, (e, l) in enumerate(exprs)
        ],
    }


def dashboard(uid, title, description, panels):
    laid = []
    for i, p in enumerate(panels):
        p = dict(p, id=i + 1, gridPos={"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i // 2)})
        laid.append(p)
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["keep"],
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "templating": {
            "list": [
                {"name": "datasource", "label": "Data source", "type": "datasource",
                 "query": "prometheus", "current": {}, "hide": 0},
            ]
        },
        "panels": laid,
    }


NODE = [
    panel("Commands per second by command",
          [("sum by (command) (rate(keep_commands_total[1m]))", "{{command}}")], "ops"),
    panel("Command errors per second by command",
          [("sum by (command) (rate(keep_command_errors_total[1m]))", "{{command}}")], "ops"),
    panel("p99 command execution time by command",
          [("histogram_quantile(0.99, sum by (command, le) (rate(keep_command_duration_seconds_bucket[1m])))",
            "{{command}}")], "s"),
    panel("p50 command execution time by command",
          [("histogram_quantile(0.5, sum by (command, le) (rate(keep_command_duration_seconds_bucket[1m])))",
            "{{command}}")], "s"),
    panel("Memory used and cap",
          [("keep_memory_used_bytes", "used {{instance}}"),
           ("keep_memory_max_bytes", "cap {{instance}}"),
           ("process_resident_memory_bytes{job=~\"keep.*\"}", "resident {{instance}}")], "bytes"),
    panel("Keys by class", [("sum by (class) (keep_class_keys)", "{{class}}")]),
    panel("Memory by class", [("sum by (class) (keep_class_memory_bytes)", "{{class}}")], "bytes"),
    panel("Evictions and expirations per second by class",
          [("sum by (class) (rate(keep_class_evicted_keys_total[1m]))", "evicted {{class}}"),
           ("sum by (class) (rate(keep_class_expired_keys_total[1m]))", "expired {{class}}")], "ops"),
    panel("Expiry lag", "keep_expiry_lag_seconds", "s"),
    panel("Client connections",
          [("keep_connected_clients", "open {{instance}}"),
           ("rate(keep_connections_received_total[1m])", "accepted/s {{instance}}"),
           ("rate(keep_connections_rejected_total[1m])", "rejected/s {{instance}}")]),
    panel("Cross-shard hops per second", "rate(keep_cross_shard_requests_total[1m])", "ops"),
    panel("Keyspace hit ratio",
          "rate(keep_keyspace_hits_total[1m]) / (rate(keep_keyspace_hits_total[1m]) + rate(keep_keyspace_misses_total[1m]))",
          "percentunit"),
    panel("Network bytes per second",
          [("rate(keep_net_input_bytes_total[1m])", "in {{instance}}"),
           ("rate(keep_net_output_bytes_total[1m])", "out {{instance}}")], "Bps"),
    panel("CPU used (cores)", "rate(process_cpu_seconds_total{job=~\"keep.*\"}[1m])"),
]

CLUSTER = [
    panel("Members up (as seen by each member)",
          [("keep_cluster_member_up", "{{instance}} hears {{member}}")]),
    panel("Members reporting", "count(up{job=~\"keep.*\"} == 1)", legend="members"),
    panel("View epoch", "keep_cluster_view_epoch"),
    panel("Fenced members", "keep_cluster_fenced"),
    panel("Slots owned", "keep_cluster_slots_owned"),
    panel("Heartbeats rejected per second by reason",
          [("sum by (reason) (rate(keep_cluster_heartbeats_rejected_total[1m]))", "{{reason}}")], "ops"),
    panel("Heartbeats missed per second by member",
          [("sum by (member) (rate(keep_cluster_heartbeats_lost_total[1m]))", "{{member}}")], "ops"),
    panel("Handoff: slots in flight", "keep_cluster_handoff_slots_in_flight"),
    panel("Redirects per second (MOVED, TRYAGAIN, CLUSTERDOWN)",
          [("sum by (type) (rate(keep_redirects_total[1m]))", "{{type}}")], "ops"),
    panel("Commands per second by member", "sum by (instance) (rate(keep_commands_total[1m]))",
          "ops"),
]

OPERATOR = [
    panel("Reconciles and reconcile errors per second",
          [("rate(keep_operator_reconcile_total[5m])", "reconciles {{instance}}"),
           ("rate(keep_operator_reconcile_errors_total[5m])", "errors {{instance}}")], "ops"),
    panel("p99 reconcile duration",
          "histogram_quantile(0.99, sum by (le) (rate(keep_operator_reconcile_duration_seconds_bucket[5m])))",
          "s", legend="p99"),
    panel("Work queue depth", "keep_operator_workqueue_depth"),
    panel("Leader", "keep_operator_leader"),
    panel("Informer relists per second", "rate(keep_operator_informer_relists_total[5m])", "ops"),
    panel("Member admin call failures per second",
          "rate(keep_operator_member_admin_failures_total[5m])", "ops"),
    panel("KeepCluster members and ready members",
          [("keep_operator_cluster_members", "members {{namespace}}/{{cluster}}"),
           ("keep_operator_cluster_ready_members", "ready {{namespace}}/{{cluster}}")]),
    panel("Degraded KeepClusters", [("keep_operator_cluster_degraded", "{{namespace}}/{{cluster}}")]),
]

DASHBOARDS = {
    "node.json": dashboard("keep-node", "Keep / Node",
                           "One Keep member: commands, latency, memory, key classes, expiry, connections.",
                           NODE),
    "cluster.json": dashboard("keep-cluster", "Keep / Cluster",
                              "Membership, fencing, slot ownership, heartbeats and handoff across members.",
                              CLUSTER),
    "operator.json": dashboard("keep-operator", "Keep / Operator",
                               "keep-operator: reconciles, work queue, leadership, informers, member admin calls, KeepClusters.",
                               OPERATOR),
}


def render(d):
    return json.dumps(d, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    for name, d in DASHBOARDS.items():
        (HERE / name).write_text(render(d))
