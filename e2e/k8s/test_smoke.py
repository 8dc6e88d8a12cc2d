"""Smoke tests of the e2e control plane: real apiserver/scheduler/controller-manager, the node
agent running pods as local processes, cluster DNS, kubectl and helm."""

import json
import os
import signal
import socket
import urllib.request
from pathlib import Path

from k8stest import wait_for

TESTDATA = Path(__file__).resolve().parent / "testdata"


def pods(cluster, ns, selector):
    return cluster.get("pods", namespace=ns, selector=selector)["items"]


def ready_pod(cluster, ns, selector):
    def check():
        items = pods(cluster, ns, selector)
        if len(items) != 1:
            return None
        p = items[0]
        conds = {c["type"]: c["status"] for c in p["status"].get("conditions", [])}
        if p["status"].get("phase") == "Running" and conds.get("Ready") == "True":
            return p
        return None
    return wait_for(check, timeout=60, what=f"a Running+Ready pod {selector} in {ns}")


def test_versions(k8s_cluster):
    v = json.loads(k8s_cluster.kubectl("version", "-o", "json").stdout)
    assert v["serverVersion"]["gitVersion"] == "v1.37.2"
    assert v["clientVersion"]["gitVersion"] == "v1.37.2"
    nodes = k8s_cluster.get("nodes")["items"]
    assert nodes, "no nodes registered"
    for n in nodes:
        cap = n["status"]["capacity"]
        assert {"cpu", "memory", "hugepages-2Mi"} <= set(cap)
        assert n["status"]["nodeInfo"]["kubeletVersion"] == "v1.37.2"
        assert not n["spec"].get("taints"), n["spec"]["taints"]
    assert "v4." in k8s_cluster.helm("version", "--short").stdout


def test_deployment_dns_and_delete(k8s_cluster, namespace):
    c, ns = k8s_cluster, namespace
    c.kubectl("apply", "-n", ns, "-f", TESTDATA / "web.yaml")
    pod = ready_pod(c, ns, "app=web")
    name, ip = pod["metadata"]["name"], pod["status"]["podIP"]
    assert ip.startswith("127."), ip
    assert pod["spec"]["nodeName"], "not bound by the scheduler"
    st = pod["status"]["containerStatuses"][0]
    assert st["ready"] and "running" in st["state"] and st["restartCount"] == 0

    table = c.kubectl("get", "pods", "-n", ns, "-o", "wide").stdout
    line = next(l for l in table.splitlines() if l.startswith(name))
    assert "Running" in line and "1/1" in line and ip in line, table

    # The process serves on its own loopback IP; its hostname is the pod name (UTS namespace).
    body = urllib.request.urlopen(f"http://{ip}:8080/", timeout=5).read().decode()
    assert body.startswith(f"hello from {name} {ip}"), body

    # Another pod resolves the headless Service by name (its own resolv.conf: search path + DNS).
    c.kubectl("run", "client", "-n", ns, "--image=keep/testhttp", "--restart=Never", "--",
              "get", f"http://web.{ns}.svc.cluster.local:8080/", "--wait", "30s")
    c.kubectl("run", "client-short", "-n", ns, "--image=keep/testhttp", "--restart=Never", "--",
              "get", "http://web:8080/", "--wait", "30s")
    # ...and a ClusterIP Service by name (port 80 -> targetPort http through the agent's proxy).
    c.kubectl("run", "client-svc", "-n", ns, "--image=keep/testhttp", "--restart=Never", "--",
              "get", "http://web-lb/", "--wait", "30s")
    cluster_ip = c.get("service", "web-lb", ns)["spec"]["clusterIP"]
    assert cluster_ip.startswith("127."), cluster_ip
    body = urllib.request.urlopen(f"http://{cluster_ip}/", timeout=5).read().decode()
    assert body.startswith(f"hello from {name}"), body
    for client in ("client", "client-short", "client-svc"):
        wait_for(lambda: c.get("pod", client, ns)["status"].get("phase") in ("Succeeded", "Failed"),
                 timeout=60, what=f"{client} pod to finish")
        p = c.get("pod", client, ns)
        logs = c.kubectl("logs", "-n", ns, client).stdout
        assert p["status"]["phase"] == "Succeeded", (p["status"], logs)
        assert f"hello from {name}" in logs, logs
        term = p["status"]["containerStatuses"][0]["state"]["terminated"]
        assert term["exitCode"] == 0

    # kill -9 of the process: the agent restarts it (restartPolicy Always) and it turns Ready again.
    os.kill(c.container_pid(ns, name), signal.SIGKILL)

    def restarted_ready():
        p = c.get("pod", name, ns)
        s = p["status"]["containerStatuses"][0]
        return s["restartCount"] == 1 and s["ready"] and s["lastState"]["terminated"]["signal"] == 9
    wait_for(restarted_ready, timeout=30, what="web restarted after SIGKILL and Ready")

    # Deleting the Deployment stops the process (SIGTERM, grace) and the pod object goes away.
    c.kubectl("delete", "deployment", "web", "-n", ns, "--wait=true", "--timeout=60s")
    wait_for(lambda: not pods(c, ns, "app=web"), timeout=60, what="web pods to be gone")

    def port_closed():
        s = socket.socket()
        s.settimeout(1)
        try:
            return s.connect_ex((ip, 8080)) != 0
        finally:
            s.close()
    wait_for(port_closed, timeout=10, what=f"{ip}:8080 to stop listening")


def test_restart_and_readiness(k8s_cluster, namespace):
    c, ns = k8s_cluster, namespace
    manifest = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "crash", "labels": {"app": "crash"}},
        "spec": {"restartPolicy": "Always", "containers": [{
            "name": "sh", "image": "debian", "command": ["/bin/sh", "-c", "echo run; sleep 0.2; exit 3"]}]},
    }
    c.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(manifest))

    def restarted():
        s = c.get("pod", "crash", ns)["status"].get("containerStatuses", [{}])[0]
        return s if s.get("restartCount", 0) >= 2 else None
    s = wait_for(restarted, timeout=60, what="crash pod restarts")
    assert s["lastState"]["terminated"]["exitCode"] == 3


def test_namespace_delete_is_finalized(k8s_cluster):
    c = k8s_cluster
    c.kubectl("create", "namespace", "doomed")
    c.kubectl("create", "configmap", "cm", "-n", "doomed", "--from-literal=a=b")
    c.kubectl("delete", "namespace", "doomed", "--wait=false")
    wait_for(lambda: c.kubectl("get", "namespace", "doomed", check=False).returncode != 0,
             timeout=60, what="namespace doomed to be finalized")


def test_helm_install(k8s_cluster, namespace):
    c, ns = k8s_cluster, namespace
    c.helm("install", "smoke", TESTDATA / "smoke-chart", "-n", ns, "--wait", "--timeout", "90s")
    rel = json.loads(c.helm("list", "-n", ns, "-o", "json").stdout)
    assert rel and rel[0]["status"] == "deployed", rel
    ready_pod(c, ns, "app=smoke-web")
    c.helm("uninstall", "smoke", "-n", ns, "--wait", "--timeout", "60s")


def test_statefulset_dns_volumes_and_in_cluster_api(k8s_cluster, namespace):
    c, ns = k8s_cluster, namespace
    c.kubectl("apply", "-n", ns, "-f", TESTDATA / "sts.yaml")

    def both_ready():
        items = pods(c, ns, "app=db")
        ok = [p for p in items if any(x["type"] == "Ready" and x["status"] == "True"
                                      for x in p["status"].get("conditions", []))]
        return items if len(ok) == 2 else None
    items = wait_for(both_ready, timeout=60, what="db-0 and db-1 Ready (exec probe)")
    ips = {p["metadata"]["name"]: p["status"]["podIP"] for p in items}

    # A pod (plain /bin/sh from the host) resolves per-pod names via its resolv.conf search path,
    # and reaches the apiserver with its mounted service-account token, like an in-cluster client.
    script = (
        "set -e; getent hosts db-0.db; getent hosts db-1.db.$NS.svc.cluster.local; "
        "cat /etc/hostname; d=/var/run/secrets/kubernetes.io/serviceaccount; cat $d/namespace; echo; "
        "curl -sf --cacert $d/ca.crt -H \"Authorization: Bearer $(cat $d/token)\" "
        "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/version"
    )
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "sh", "image": "debian", "command": ["/bin/sh", "-c", script],
            "env": [{"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}]}]},
    }
    c.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(pod))
    wait_for(lambda: c.get("pod", "probe", ns)["status"].get("phase") in ("Succeeded", "Failed"),
             timeout=60, what="probe pod to finish")
    logs = c.kubectl("logs", "-n", ns, "probe").stdout
    assert c.get("pod", "probe", ns)["status"]["phase"] == "Succeeded", logs
    assert f"{ips['db-0']} " in logs and f"{ips['db-1']} " in logs, logs
    assert "probe\n" in logs and f"{ns}\n" in logs, logs
    assert '"gitVersion": "v1.37.2"' in logs, logs

    # exec_in: a command in db-0's namespaces sees its hostname, volume and env.
    out = c.exec_in(ns, "db-0", "/bin/sh", "-c", "hostname; echo $(cat /etc/db/ready) $POD_IP").stdout
    assert out.split() == ["db-0", "yes", ips["db-0"]], out

    # ConfigMap updates reach the mounted volume; the exec probe then fails: NotReady.
    c.kubectl("patch", "configmap", "db-config", "-n", ns, "--type=json",
              "-p", '[{"op": "remove", "path": "/data/ready"}]')

    def none_ready():
        items = pods(c, ns, "app=db")
        return all(not any(x["type"] == "Ready" and x["status"] == "True"
                           for x in p["status"].get("conditions", [])) for p in items)
    wait_for(none_ready, timeout=40, what="db pods to turn NotReady")


def test_prestop_hook_and_grace(k8s_cluster, namespace):
    c, ns = k8s_cluster, namespace
    out = c.state / f"hook-{ns}"
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hooked"},
        "spec": {"terminationGracePeriodSeconds": 10, "containers": [{
            "name": "web", "image": "keep/testhttp",
            "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
            "lifecycle": {"preStop": {"exec": {"command": [
                "/bin/sh", "-c", "echo $(hostname) > /out/prestop"]}}},
            "volumeMounts": [{"name": "out", "mountPath": "/out"}]}],
            "volumes": [{"name": "out", "hostPath": {"path": str(out), "type": "DirectoryOrCreate"}}]},
    }
    c.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(pod))
    wait_for(lambda: c.get("pod", "hooked", ns)["status"].get("phase") == "Running", timeout=60,
             what="hooked pod Running")
    c.kubectl("delete", "pod", "hooked", "-n", ns, "--wait=true", "--timeout=30s")
    assert (out / "prestop").read_text().strip() == "hooked"
