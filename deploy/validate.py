#!/usr/bin/env python3
"""Consistency checks for the deployment kit that schemas cannot make.

Run by deploy/validate.sh. Each failed check prints what is wrong and where; the exit status is 1 if any failed.
"""
import argparse
import json
import pathlib
import re
import sys

import yaml

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def load_all(path):
    with open(path) as handle:
        return [document for document in yaml.safe_load_all(handle) if document]


def leaf_keys(value, prefix=""):
    """Dotted names of the leaves of a JSON object: {"a": {"b": 1}} -> ["a.b"]."""
    keys = []
    for key, child in value.items():
        name = f"{prefix}{key}"
        if isinstance(child, dict):
            keys += leaf_keys(child, name + ".")
        else:
            keys.append(name)
    return keys


def seconds(text):
    """A compose duration like 20s or 1m30s in seconds."""
    total = 0
    for amount, unit in re.findall(r"(\d+)(h|m|s)", str(text)):
        total += int(amount) * {"h": 3600, "m": 60, "s": 1}[unit]
    return total


def matches(selector, labels):
    return all(labels.get(key) == value for key, value in selector.items())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--allow-unknown-keys", action="store_true")
    arguments = parser.parse_args()
    root = pathlib.Path(arguments.root)
    kube = root / "deploy" / "kubernetes"

    resources = {}
    for path in sorted(kube.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for document in load_all(path):
            resources[(document["kind"], document["metadata"]["name"])] = (path.name, document)

    # kustomization.yaml lists every manifest but the example secret.
    with open(kube / "kustomization.yaml") as handle:
        kustomization = yaml.safe_load(handle)
    listed = set(kustomization["resources"])
    expected = {path.name for path in kube.glob("*.yaml")} - {"kustomization.yaml", "secret.example.yaml"}
    check(listed == expected, f"kustomization.yaml lists {sorted(listed)}, expected {sorted(expected)}")

    # The Dockerfile's contract: config path, port, user.
    dockerfile = (root / "Dockerfile").read_text()
    config_path = re.search(r"SPOUT_CONFIG=(\S+)", dockerfile).group(1)
    image_port = int(re.search(r"SPOUT_PORT=(\d+)", dockerfile).group(1))
    image_uid = int(re.search(r"--uid (\d+)", dockerfile).group(1))
    user = re.search(r"^USER (\S+)", dockerfile, re.M)
    check(user is not None and user.group(1).split(":")[0] == str(image_uid),
          f"the Dockerfile's USER must be numeric, the uid {image_uid} (runAsNonRoot cannot check a name)")

    # The configuration file and the keys Spout knows.
    _, configmap = resources[("ConfigMap", "spout-config")]
    config_text = configmap["data"]["spout.json"]
    try:
        config = json.loads(config_text)
    except json.JSONDecodeError as error:
        check(False, f"configmap.yaml: spout.json is not valid JSON: {error}")
        config = {}
    known = set()
    for source in (root / "Sources" / "Spout" / "Config").glob("*.swift"):
        known |= set(re.findall(r'"([A-Za-z]+(?:\.[A-Za-z]+)?)"', source.read_text()))
    unknown = [key for key in leaf_keys(config) if key not in known]
    if unknown:
        message = (f"configmap.yaml: spout.json uses keys that Sources/Spout/Config does not define: {unknown} "
                   "(Spout refuses to start with an unknown key)")
        if arguments.allow_unknown_keys:
            print(f"   warning: {message}")
        else:
            check(False, message)
    shutdown = config.get("shutdown", {})
    delay = float(shutdown.get("delaySeconds", 0))
    grace = float(shutdown.get("graceSeconds", 10))
    check(config.get("port") == image_port, f"spout.json port {config.get('port')} is not the image's {image_port}")
    check(config.get("host") == "0.0.0.0", "spout.json must listen on 0.0.0.0 in a pod")
    # The channels block: tokens are secrets (the Deployment takes them from spout-secrets, checked below), so the
    # file must not carry any; the overflow policy and the Redis readiness must be ones Spout knows; the Redis URL must
    # name the kit's Redis.
    channels = config.get("channels", {})
    check(isinstance(channels, dict), "spout.json: channels must be an object")
    if isinstance(channels, dict):
        for name in ("publishTokens", "subscribeTokens"):
            check(not channels.get(name), f"spout.json: channels.{name} belongs in the secret, not the ConfigMap")
        check(channels.get("overflow", "disconnect") in ("disconnect", "drop-oldest"),
              f"spout.json: channels.overflow {channels.get('overflow')!r} is not disconnect or drop-oldest")
        check(channels.get("redisReadiness", "report") in ("report", "fail"),
              f"spout.json: channels.redisReadiness {channels.get('redisReadiness')!r} is not report or fail")
        if "redisURL" in channels:
            redis_url = channels.get("redisURL", "")
            redis_host = re.match(r"redis://(?:[^@]*@)?([^:/]+)", redis_url)
            check(redis_host and ("Service", redis_host.group(1)) in resources,
                  f"channels.redisURL {redis_url!r} does not name a Service of the kit")

    # The Deployment.
    _, deployment = resources[("Deployment", "spout")]
    pod = deployment["spec"]["template"]["spec"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    check(matches(deployment["spec"]["selector"]["matchLabels"], labels), "deployment selector misses its pods")
    termination = pod.get("terminationGracePeriodSeconds", 30)
    check(termination > delay + grace,
          f"terminationGracePeriodSeconds {termination} must exceed shutdown delay + grace ({delay + grace})")
    check(pod["securityContext"].get("runAsNonRoot") is True, "pod must set runAsNonRoot")
    check(pod["securityContext"].get("runAsUser") == image_uid, f"runAsUser must be the image's user {image_uid}")
    (container,) = pod["containers"]
    security = container["securityContext"]
    check(security.get("readOnlyRootFilesystem") is True, "container must have a read-only root filesystem")
    check(security.get("allowPrivilegeEscalation") is False, "container must not allow privilege escalation")
    check(security.get("capabilities", {}).get("drop") == ["ALL"], "container must drop all capabilities")
    for kind in ("requests", "limits"):
        for resource in ("cpu", "memory"):
            check(resource in container.get("resources", {}).get(kind, {}), f"container needs a {resource} {kind[:-1]}")
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    check(ports.get("http") == image_port, f"container port http must be {image_port}")
    probes = {name: container.get(name, {}).get("httpGet", {}) for name in
              ("startupProbe", "livenessProbe", "readinessProbe")}
    check(probes["livenessProbe"].get("path") == "/health", "liveness must probe /health")
    check(probes["readinessProbe"].get("path") == "/ready", "readiness must probe /ready")
    check(all(probe.get("port") == "http" for probe in probes.values()), "probes must use the http port")
    environment = {entry["name"]: entry for entry in container.get("env", [])}
    check(environment.get("SPOUT_CONFIG", {}).get("value", config_path) == config_path,
          f"SPOUT_CONFIG must stay {config_path}")
    mounts = {mount["name"]: mount["mountPath"] for mount in container.get("volumeMounts", [])}
    volumes = {volume["name"]: volume for volume in pod.get("volumes", [])}
    config_mount = [name for name, volume in volumes.items()
                    if volume.get("configMap", {}).get("name") == "spout-config"]
    check(len(config_mount) == 1 and mounts.get(config_mount[0]) == str(pathlib.PurePosixPath(config_path).parent),
          f"the ConfigMap must be mounted at {pathlib.PurePosixPath(config_path).parent}")
    for name in ("SPOUT_REDIS_URL", "SPOUT_CHANNELS_PUBLISH_TOKENS"):
        reference = environment.get(name, {}).get("valueFrom", {}).get("secretKeyRef")
        check(reference is not None, f"{name} must come from a secret")
    if ("Secret", "spout-secrets") in resources:
        _, secret = resources[("Secret", "spout-secrets")]
        for name in ("SPOUT_REDIS_URL", "SPOUT_CHANNELS_PUBLISH_TOKENS"):
            key = environment[name]["valueFrom"]["secretKeyRef"]["key"]
            check(key in secret.get("stringData", {}), f"secret.example.yaml lacks the key {key} that {name} reads")

    # What points at the Deployment's pods.
    _, service = resources[("Service", "spout")]
    check(matches(service["spec"]["selector"], labels), "service spout selects no spout pod")
    check(all(port["targetPort"] in ports for port in service["spec"]["ports"]), "service targets an unknown port")
    _, budget = resources[("PodDisruptionBudget", "spout")]
    check(matches(budget["spec"]["selector"]["matchLabels"], labels), "the disruption budget selects no spout pod")
    _, autoscaler = resources[("HorizontalPodAutoscaler", "spout")]
    target = autoscaler["spec"]["scaleTargetRef"]
    check((target["kind"], target["name"]) == ("Deployment", "spout"), "the autoscaler targets something else")
    check(autoscaler["spec"]["minReplicas"] >= 2, "fewer than two replicas cannot survive a disruption")

    # Redis.
    _, statefulset = resources[("StatefulSet", "spout-redis")]
    redis_labels = statefulset["spec"]["template"]["metadata"]["labels"]
    check(("Service", statefulset["spec"]["serviceName"]) in resources, "the StatefulSet's serviceName is missing")
    for name in ("spout-redis", statefulset["spec"]["serviceName"]):
        check(matches(resources[("Service", name)][1]["spec"]["selector"], redis_labels), f"{name} selects no redis")
    check(not matches(service["spec"]["selector"], redis_labels), "service spout would also select redis")
    _, policy = resources[("NetworkPolicy", "spout-redis")]
    check(matches(policy["spec"]["podSelector"]["matchLabels"], redis_labels), "the network policy misses redis")
    allowed = policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]
    check(matches(allowed, labels), "the network policy shuts spout out of redis")
    redis_args = statefulset["spec"]["template"]["spec"]["containers"][0].get("args", [])
    check("noeviction" in redis_args, "redis must not evict keys (channel histories)")

    check_compose(root, delay, grace)
    check_ingress(root, resources, service, config)
    check_monitoring(root, kube, service, config)
    check_tls(kube, config, pod, container, ports, service)

    if failures:
        for failure in failures:
            print(f"   FAIL {failure}")
        sys.exit(1)
    print("   kit consistent")


def check_compose(root, delay, grace):
    with open(root / "compose.yaml") as handle:
        compose = yaml.safe_load(handle)
    services = compose.get("services", {})
    replicas = [name for name in services if name.startswith("spout-")]
    check(len(replicas) == 2, f"compose.yaml should run two replicas, has {replicas}")
    for name in replicas:
        spout = services[name]
        environment = spout.get("environment", {})
        url = environment.get("SPOUT_REDIS_URL", "")
        host = re.match(r"redis://(?:[^@]*@)?([^:/]+)", url)
        check(host and host.group(1) in services, f"{name}: SPOUT_REDIS_URL {url!r} names no compose service")
        compose_delay = float(environment.get("SPOUT_SHUTDOWN_DELAY_SECONDS", delay))
        compose_grace = float(environment.get("SPOUT_SHUTDOWN_GRACE_SECONDS", grace))
        check(seconds(spout.get("stop_grace_period", "10s")) > compose_delay + compose_grace,
              f"{name}: stop_grace_period must exceed shutdown delay + grace")
        check(spout.get("read_only") is True and spout.get("cap_drop") == ["ALL"], f"{name}: harden the container")
        for dependency in spout.get("depends_on", {}):
            check(dependency in services, f"{name} depends on unknown service {dependency}")
    balancer = [name for name, service in services.items() if service.get("ports")]
    check(balancer == ["lb"], f"only the load balancer should publish a port, got {balancer}")
    mounts = [volume.split(":")[0] for volume in services["lb"].get("volumes", [])]
    check(len(mounts) == 1, "the load balancer mounts its config")
    conf = (root / mounts[0]).read_text() if mounts else ""
    directives = {line.strip().rstrip(";") for line in conf.splitlines()}
    for required in ("proxy_buffering off", "proxy_cache off", "proxy_http_version 1.1", 'proxy_set_header Connection ""'):
        check(required in directives, f"nginx.conf lacks `{required};`")
    timeout = re.search(r"proxy_read_timeout (\d+)([smh]?)", conf)
    read_seconds = int(timeout.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[timeout.group(2)] if timeout else 60
    check(read_seconds >= 600, f"nginx proxy_read_timeout {read_seconds}s is too short for streams")
    # Idle keep-alive connections to the replicas must be dropped by nginx before Spout drops them
    # (limits.idleTimeoutSeconds, 60 s by default), or a POST may go out on a connection being closed.
    if re.search(r"^\s*keepalive \d+;", conf, re.MULTILINE):
        idle = re.search(r"^\s*keepalive_timeout (\d+)s?;", conf, re.MULTILINE)
        check(idle and int(idle.group(1)) < 60,
              "nginx upstream keep-alive needs keepalive_timeout below Spout's idle timeout (60 s)")
    upstreams = set(re.findall(r"server ([A-Za-z0-9_-]+):8080", conf))
    check(upstreams == set(replicas), f"nginx upstream {sorted(upstreams)} is not the replicas {replicas}")


def swift_default(root, name):
    """The default of `public var name = value` in Sources/Spout/Config/SpoutConfiguration.swift, as a float."""
    source = (root / "Sources" / "Spout" / "Config" / "SpoutConfiguration.swift").read_text()
    found = re.search(rf"public var {name} = ([0-9_.]+)", source)
    return float(found.group(1).replace("_", "")) if found else None


def check_ingress(root, resources, service, config):
    """ingress.yaml: routes to the Service's port, no buffering, timeouts well beyond the SSE heartbeat."""
    if not check(("Ingress", "spout") in resources, "the kit has no Ingress spout (ingress.yaml)"):
        return
    _, ingress = resources[("Ingress", "spout")]
    annotations = ingress["metadata"].get("annotations", {})
    prefix = "nginx.ingress.kubernetes.io/"
    check(annotations.get(prefix + "proxy-buffering") == "off",
          "ingress.yaml: streams need proxy-buffering \"off\" (or events arrive late, in bursts)")
    check(annotations.get(prefix + "proxy-http-version", "1.1") == "1.1", "ingress.yaml: the pods speak HTTP/1.1")
    # A quiet stream carries one heartbeat comment every sse.heartbeatSeconds; a timeout of twice that survives one
    # heartbeat late by a full interval. ingress-nginx's default for both is 60 s.
    heartbeat = float(config.get("sse", {}).get("heartbeatSeconds", swift_default(root, "heartbeatSeconds")))
    for name in ("proxy-read-timeout", "proxy-send-timeout"):
        value = annotations.get(prefix + name, "60")
        check(re.fullmatch(r"\d+", str(value)) is not None and int(value) >= 2 * heartbeat,
              f"ingress.yaml: {name} {value!r} must be a number of seconds at least twice sse.heartbeatSeconds "
              f"({heartbeat:g})")
    service_ports = {port["name"]: port["port"] for port in service["spec"]["ports"]}
    for rule in ingress["spec"].get("rules", []):
        for path in rule.get("http", {}).get("paths", []):
            backend = path["backend"]["service"]
            check(backend["name"] == service["metadata"]["name"],
                  f"ingress.yaml: backend {backend['name']!r} is not the Service spout")
            port = backend["port"]
            check(port.get("name") in service_ports or port.get("number") in service_ports.values(),
                  f"ingress.yaml: backend port {port} is not a port of the Service")


# Metrics a rule or panel may read that Spout does not serve: Prometheus's own `up`, and kube-state-metrics' pod
# readiness and ownership (SpoutNotReady).
EXTERNAL_METRICS = {"up", "kube_pod_status_ready", "kube_pod_owner"}
PROMQL_WORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left",
                "group_right", "inf", "nan"}


def metric_names(expr):
    """The metric names a PromQL expression reads: identifiers outside strings, label matchers, ranges and
    grouping clauses that are not followed by `(` (functions, aggregations) nor keywords."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = re.findall(r"(?<![\w.$])([A-Za-z_:][A-Za-z0-9_:]*)\b(?!\s*\()", text)
    return {name for name in names if name.lower() not in PROMQL_WORDS}


def served_metrics(root):
    """The metric names Spout serves, read from the Swift sources: every quoted spout_… and process_… name, with
    _bucket/_sum/_count for its histograms and _sum/_count for its summary."""
    names = set()
    for source in (root / "Sources").rglob("*.swift"):
        text = source.read_text()
        found = set(re.findall(r'"((?:spout|process)_[a-z_]+)', text))
        names |= found
        for histogram in re.findall(r'registry\.histogram\(\s*"([a-z_]+)"', text):
            names |= {histogram + suffix for suffix in ("_bucket", "_sum", "_count")}
        # A family rendered by hand: `let name = "…"` then `# TYPE \(name) summary`.
        if re.search(r"TYPE \\\(name\) summary", text):
            for summary in re.findall(r'let name = "([a-z_]+)"', text):
                names |= {summary + "_sum", summary + "_count"}
    return names


def enum_values(root, relative):
    """The raw values of a String enum's cases (`case clientGone = "client_gone"` gives client_gone)."""
    text = (root / relative).read_text()
    return {raw or name for name, raw in re.findall(r'^\s*case (\w+)(?: = "([^"]*)")?$', text, re.M)}


def check_queries(root, where, expressions):
    """Every metric a query reads exists, and every outcome/reason/result it matches is a value Spout uses."""
    served = served_metrics(root)
    labels = {
        "outcome": enum_values(root, "Sources/Spout/Observability/UpstreamOutcome.swift"),
        "reason": enum_values(root, "Sources/Spout/Observability/StreamEnd.swift"),
        "result": enum_values(root, "Sources/Spout/Cache/CacheLookup.swift"),
    }
    for name, expr in expressions:
        names = metric_names(expr)
        check(names, f"{where}: {name} reads no metric: {expr!r}")
        for metric in sorted(names - served - EXTERNAL_METRICS):
            check(False, f"{where}: {name} reads {metric}, which Spout does not serve (not in Sources/)")
        for label, operator, value in re.findall(r'\b(outcome|reason|result)\s*(=~|!~|!=|=)\s*"([^"]*)"', expr):
            for alternative in value.split("|") if "~" in operator else [value]:
                check(alternative in labels[label],
                      f"{where}: {name} matches {label}={alternative!r}, not one of {sorted(labels[label])}")


def check_tls(kube, config, pod, container, ports, service):
    """deploy/kubernetes/tls (cert-manager's Certificate and Issuer: CRDs the schemas do not know) and HTTPS in the
    kit: the Certificate's secret is mounted as a directory (no subPath: renewals would never show), the
    configuration's tls files are in that directory, tls.port is the container's https port and the Service's."""
    directory = kube / "tls"
    resources = {}
    for path in sorted(directory.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            for document in load_all(path):
                resources[(document["kind"], document["metadata"]["name"])] = document
    with open(directory / "kustomization.yaml") as handle:
        listed = set(yaml.safe_load(handle)["resources"])
    expected = {path.name for path in directory.glob("*.yaml")} - {"kustomization.yaml"}
    check(listed == expected, f"tls/kustomization.yaml lists {sorted(listed)}, expected {sorted(expected)}")
    certificates = [document for (kind, _), document in resources.items() if kind == "Certificate"]
    if not check(len(certificates) == 1, "tls/ must hold one cert-manager Certificate"):
        return
    (certificate,) = certificates
    check(certificate["apiVersion"] == "cert-manager.io/v1", "the Certificate's apiVersion is wrong")
    issuer = certificate["spec"]["issuerRef"]
    if issuer.get("kind", "Issuer") == "Issuer":
        check((issuer.get("kind", "Issuer"), issuer["name"]) in resources,
              f"the Certificate's Issuer {issuer['name']!r} is not in tls/")
    secret_name = certificate["spec"]["secretName"]
    volumes = [volume for volume in pod.get("volumes", []) if volume.get("secret", {}).get("secretName") == secret_name]
    if not check(len(volumes) == 1, f"the Deployment does not mount the Certificate's secret {secret_name!r}"):
        return
    mounts = [mount for mount in container.get("volumeMounts", []) if mount["name"] == volumes[0]["name"]]
    if not check(len(mounts) == 1, f"the secret volume {volumes[0]['name']!r} is not mounted in the container"):
        return
    check("subPath" not in mounts[0] and "subPathExpr" not in mounts[0],
          "the TLS secret must be mounted as a directory: a subPath mount never sees the renewed files")
    mode = volumes[0]["secret"].get("defaultMode", 0o644)
    if mode & 0o004 == 0:
        check(pod["securityContext"].get("fsGroup") == pod["securityContext"].get("runAsGroup"),
              "the TLS secret's files are not world-readable: the pod needs fsGroup = runAsGroup to read them")
    tls = config.get("tls", {})
    mount = pathlib.PurePosixPath(mounts[0]["mountPath"])
    for key, name in (("certificateFile", "tls.crt"), ("privateKeyFile", "tls.key")):
        check(tls.get(key) == str(mount / name), f"spout.json: tls.{key} must be {mount / name} (the secret's {name})")
    check(tls.get("port") == ports.get("https"),
          f"spout.json: tls.port {tls.get('port')} is not the container's https port {ports.get('https')}")
    check(any(port["targetPort"] == "https" for port in service["spec"]["ports"]), "the Service has no https port")


def check_monitoring(root, kube, service, config):
    """deploy/kubernetes/monitoring (ServiceMonitor, PrometheusRule: CRDs the schemas do not know), the Prometheus
    rules and the Grafana dashboard."""
    monitoring = kube / "monitoring"
    resources = {}
    for path in sorted(monitoring.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            for document in load_all(path):
                resources[document["kind"]] = document
    with open(monitoring / "kustomization.yaml") as handle:
        listed = set(yaml.safe_load(handle)["resources"])
    expected = {path.name for path in monitoring.glob("*.yaml")} - {"kustomization.yaml"}
    check(listed == expected, f"monitoring/kustomization.yaml lists {sorted(listed)}, expected {sorted(expected)}")

    monitor = resources.get("ServiceMonitor")
    if check(monitor is not None, "monitoring/ has no ServiceMonitor"):
        check(monitor["apiVersion"] == "monitoring.coreos.com/v1", "the ServiceMonitor's apiVersion is wrong")
        check(matches(monitor["spec"]["selector"].get("matchLabels", {}), service["metadata"].get("labels", {})),
              "the ServiceMonitor's selector does not match the Service spout's labels")
        service_ports = {port["name"] for port in service["spec"]["ports"]}
        for endpoint in monitor["spec"]["endpoints"]:
            check(endpoint.get("port") in service_ports,
                  f"the ServiceMonitor scrapes port {endpoint.get('port')!r}, not a port name of the Service")
            check(endpoint.get("path") == "/metrics", "the ServiceMonitor must scrape /metrics")
        # The job label is the Service's name unless jobLabel says otherwise; the rules select job="spout".
        check("jobLabel" not in monitor["spec"] and service["metadata"]["name"] == "spout",
              "the rules and the dashboard expect job=\"spout\": the Service's name, without jobLabel")

    prometheus = root / "deploy" / "prometheus"
    with open(prometheus / "spout-rules.yaml") as handle:
        rules = yaml.safe_load(handle)
    rule = resources.get("PrometheusRule")
    if check(rule is not None, "monitoring/ has no PrometheusRule"):
        check(rule["spec"]["groups"] == rules["groups"],
              "monitoring/prometheusrule.yaml differs from deploy/prometheus/spout-rules.yaml "
              "(deploy/prometheus/check.sh --sync)")
    alerts = [entry for group in rules["groups"] for entry in group["rules"]]
    check_queries(root, "spout-rules.yaml", [(entry["alert"], entry["expr"]) for entry in alerts])
    for entry in alerts:
        check(entry.get("labels", {}).get("severity") in ("critical", "warning"),
              f"spout-rules.yaml: {entry['alert']} needs severity critical or warning")
        check("summary" in entry.get("annotations", {}), f"spout-rules.yaml: {entry['alert']} needs a summary")
        for job in re.findall(r'\bjob\s*=\s*"([^"]*)"', entry["expr"]):
            check(job == "spout", f"spout-rules.yaml: {entry['alert']} selects job {job!r}, the ServiceMonitor's is spout")
    # Every alert has a unit test.
    tests = (prometheus / "spout-rules.test.yaml").read_text()
    for entry in alerts:
        check(re.search(rf"alertname: {entry['alert']}$", tests, re.M),
              f"spout-rules.test.yaml has no test for {entry['alert']}")
    # The connection alert's threshold is 90 % of maxConnections.
    limit = config.get("maxConnections", swift_default(root, "maxConnections"))
    near = [entry for entry in alerts if entry["alert"] == "SpoutConnectionsNearLimit"]
    if check(len(near) == 1, "spout-rules.yaml has no SpoutConnectionsNearLimit"):
        threshold = re.search(r">\s*([0-9.]+)\s*$", near[0]["expr"].strip())
        check(threshold and float(threshold.group(1)) == 0.9 * float(limit),
              f"SpoutConnectionsNearLimit's threshold must be 90 % of maxConnections ({limit}): {near[0]['expr']!r}")

    with open(root / "deploy" / "grafana" / "spout-dashboard.json") as handle:
        dashboard = json.load(handle)
    panels = dashboard["panels"]
    ids = [panel["id"] for panel in panels]
    check(len(ids) == len(set(ids)), "spout-dashboard.json: panel ids repeat")
    queries = []
    for panel in panels:
        if panel["type"] == "row":
            continue
        check(panel.get("datasource", {}).get("uid") == "${datasource}",
              f"spout-dashboard.json: panel {panel['title']!r} must use the ${{datasource}} variable")
        targets = panel.get("targets", [])
        check(targets, f"spout-dashboard.json: panel {panel['title']!r} has no query")
        check(len({target["refId"] for target in targets}) == len(targets),
              f"spout-dashboard.json: panel {panel['title']!r} repeats a refId")
        for target in targets:
            check('job=~"$job"' in target["expr"],
                  f"spout-dashboard.json: a query of {panel['title']!r} ignores the $job variable")
            queries.append((repr(panel["title"]), target["expr"]))
    check_queries(root, "spout-dashboard.json", queries)


if __name__ == "__main__":
    main()
