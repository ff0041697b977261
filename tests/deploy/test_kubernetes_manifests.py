"""deploy/kubernetes/: schema-valid manifests (kubernetes-validate, Kubernetes' own schemas,
no cluster), and every value the runtime reads from them goes through the real
``streamrt run`` parser and config loader, as in a pod named ``wordcount-1``."""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from streamrt.cli import build_parser
from streamrt.rest.settings import ENV_KEYS, RestSettings
from streamrt.run import load_app, run_settings
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.env_config import read_env

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "deploy" / "kubernetes"
POD, NAMESPACE = "wordcount-1", "streams"


def documents() -> dict[str, dict[str, Any]]:
    """kind → the one resource of that kind in deploy/kubernetes/."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(MANIFESTS.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            assert doc["kind"] not in out, f"two {doc['kind']}s"
            out[doc["kind"]] = doc
    return out


def container(docs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    (c,) = docs["StatefulSet"]["spec"]["template"]["spec"]["containers"]
    return c


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion in command and args."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env[m.group(1)], text)


def test_every_manifest_passes_kubernetes_schema_strictly() -> None:
    version = kubernetes_validate.latest_version()
    docs = documents()
    assert set(docs) == {"StatefulSet", "Service", "PodDisruptionBudget", "ConfigMap"}
    for doc in docs.values():
        kubernetes_validate.validate(doc, version, strict=True)
    broken = copy.deepcopy(docs["StatefulSet"])
    broken["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "http"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, version, strict=True)


def pod_settings(
    docs: dict[str, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The container's command parsed by ``streamrt run``'s parser, with the ConfigMap at
    its mount path (moved under tmp_path) -> (args as a dict, the settings it yields)."""
    c = container(docs)
    env = {"POD_NAME": POD, "POD_NAMESPACE": NAMESPACE}
    for var in c["env"]:
        field = var.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        if field is not None:
            assert (
                env[var["name"]] == {"metadata.name": POD, "metadata.namespace": NAMESPACE}[field]
            )
    argv = [expand(a, env) for a in c["command"]]
    assert argv[:2] == ["streamrt", "run"]
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    config_dir = tmp_path / mounts["config"].lstrip("/")
    config_dir.mkdir(parents=True)
    for name, text in docs["ConfigMap"]["data"].items():
        (config_dir / name).write_text(text)
    i = argv.index("--config-file")
    assert Path(argv[i + 1]).parent == Path(mounts["config"])
    argv[i + 1] = str(config_dir / Path(argv[i + 1]).name)
    for key in [k for k in os.environ if k.startswith("STREAMRT_")]:
        monkeypatch.delenv(key)
    args = build_parser(argv[1:]).parse_args(argv[1:])
    assert args.command == "run"
    return vars(args), run_settings(args)


def test_the_pod_runs_with_its_name_as_instance_id_and_its_dns_name_as_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = documents()
    args, settings = pod_settings(docs, tmp_path, monkeypatch)
    app = load_app(args["target"])  # the image's working directory holds apps/
    streams = {k: v for k, v in settings.items() if not k.startswith("rest.")}
    config = StreamsConfig.from_mapping({**app.settings, **streams})
    rest = RestSettings.from_mapping(settings)
    sts, service = docs["StatefulSet"], docs["Service"]
    c = container(docs)
    assert config.application_id == "wordcount"
    assert config.group_instance_id == POD  # static membership: stable across replacements
    port = {p["name"]: p["containerPort"] for p in c["ports"]}["http"]
    dns = f"{POD}.{sts['spec']['serviceName']}.{NAMESPACE}.svc.cluster.local"
    assert config.application_server == f"{dns}:{port}"
    assert rest.bind_address == "0.0.0.0"  # reachable on the pod's IP, not only loopback
    # the state lives on the volume claim
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    mount = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}[claim["metadata"]["name"]]
    assert Path(config.state_dir).is_relative_to(mount)
    # the headless service gives each pod its DNS name, on the REST port
    assert service["metadata"]["name"] == sts["spec"]["serviceName"]
    assert service["spec"]["clusterIP"] == "None"
    labels = sts["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert sts["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["ports"][0]["port"] == port
    pdb = docs["PodDisruptionBudget"]["spec"]
    assert pdb["maxUnavailable"] == 1 and pdb["selector"]["matchLabels"].items() <= labels.items()
    # the secret's variable is a setting streamrt reads
    names = [v["name"] for v in c["env"] if v["name"].startswith("STREAMRT_")]
    assert read_env({n: "x" for n in names}, also=ENV_KEYS) == {"rest.auth.token": "x"}


def test_a_replaced_pod_comes_back_within_the_session_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stop (grace period) + start (the startup probe's budget) < session.timeout.ms, so a
    rolling update costs no rebalance; the preStop stops streamrt and waits for its exit."""
    docs = documents()
    _, settings = pod_settings(docs, tmp_path, monkeypatch)
    streams = {k: v for k, v in settings.items() if not k.startswith("rest.")}
    config = StreamsConfig.from_mapping(streams)
    pod = docs["StatefulSet"]["spec"]["template"]["spec"]
    c = container(docs)
    startup = c["startupProbe"]
    start_s = startup.get("initialDelaySeconds", 0) + (
        startup["periodSeconds"] * startup["failureThreshold"]
    )
    replacement_ms = (pod["terminationGracePeriodSeconds"] + start_s) * 1000
    assert config.session_timeout_ms > replacement_ms
    assert config.heartbeat_interval_ms * 3 <= config.session_timeout_ms
    pre_stop = " ".join(c["lifecycle"]["preStop"]["exec"]["command"])
    assert "kill -TERM 1" in pre_stop and "kill -0 1" in pre_stop  # stop, then wait for it
    ready = c["readinessProbe"]["exec"]["command"]
    compile(ready[-1], "readinessProbe", "exec")  # the folded one-liner is valid Python
    assert "/v1/threads" in ready[-1] and str(c["ports"][0]["containerPort"]) in ready[-1]
