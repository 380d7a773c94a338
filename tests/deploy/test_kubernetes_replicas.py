"""The replicated layout of the Kubernetes manifests (``deploy/kubernetes/overlays/replicas``),
rendered by ``kubectl kustomize`` and checked statically.

Tested: the overlay renders a StatefulSet (and no Deployment or HPA) with the Services and the
settings it needs, and every object validates strictly against the Kubernetes 1.37 and 1.31
schemas; the StatefulSet's pod is the base Deployment's pod (probes, security, resources, data
volume, grace period, annotations, the image's own command) plus a collections volume per pod
and the member variables; each member's environment, as the kubelet expands it, builds valid
Settings: every pod follows pod 0's stable DNS URL and advertises its own, so pod 0's ``follow``
is its own URL (which the server reads as "lead") and pods 1 and 2 follow pod 0, all with the
same set size as the StatefulSet's replicas and with admin keys; the headless Service publishes
not-ready pods and names the pods' URLs, the write Service selects pod 0, the read Service every
pod, and the PDB keeps a majority; the ServiceMonitor component selects only the read Service,
so each pod is scraped once.

Not tested: nothing is applied to a cluster (there is none here): DNS of the headless Service,
volume provisioning and fsGroup ownership, the kubelet's own variable expansion and a failover
on Kubernetes are unverified. The replication itself runs as real processes in
``test_compose.py`` (a leader started with ``follow`` naming its own URL, as pod 0 is, included)
and the e2e tests.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from service.settings import Settings
from tests.deploy.test_kubernetes import (
    ENV_PREFIX,
    KUBERNETES_ROOT,
    KUBERNETES_VERSION,
    OLDEST_KUBERNETES_VERSION,
    PLACEHOLDER_KEY,
    PORT,
    SELECTOR,
    SERVICEMONITOR_COMPONENT,
    Manifest,
    kustomize,
    only,
)

REPLICAS_OVERLAY = KUBERNETES_ROOT / "overlays" / "replicas"
NAMESPACE = "search"
POD_VARIABLES = {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}
_REFERENCE = re.compile(r"\$\((\w+)\)")


@pytest.fixture(scope="module")
def rendered() -> list[Manifest]:
    return kustomize(REPLICAS_OVERLAY)


@pytest.fixture(scope="module")
def base_pod() -> Manifest:
    """The pod template of the cpu overlay's Deployment."""
    template: Manifest = only(kustomize(KUBERNETES_ROOT / "overlays" / "cpu"), "Deployment")[
        "spec"
    ]["template"]
    return template


def statefulset(manifests: list[Manifest]) -> Manifest:
    return only(manifests, "StatefulSet")


def container(manifests: list[Manifest]) -> Manifest:
    (found,) = statefulset(manifests)["spec"]["template"]["spec"]["containers"]
    result: Manifest = found
    return result


def service(manifests: list[Manifest], name: str) -> Manifest:
    (found,) = [m for m in manifests if m["kind"] == "Service" and m["metadata"]["name"] == name]
    result: Manifest = found
    return result


def configmap(manifests: list[Manifest], prefix: str) -> Manifest:
    """The generated ConfigMap named ``prefix`` + its content hash."""
    (found,) = [
        m
        for m in manifests
        if m["kind"] == "ConfigMap" and re.fullmatch(rf"{prefix}-\w+", m["metadata"]["name"])
    ]
    result: Manifest = found
    return result


def member_environment(manifests: list[Manifest], ordinal: int) -> dict[str, str]:
    """The variables pod ``ordinal`` starts with, as the kubelet gives them: the settings
    ConfigMap's, then ``env`` in order with ``$(NAME)`` expanded from what precedes it, the
    downward API's pod name and namespace, and a placeholder for each Secret key."""
    pod_name = f"{statefulset(manifests)['metadata']['name']}-{ordinal}"
    fields = {"metadata.name": pod_name, "metadata.namespace": NAMESPACE}
    environment: dict[str, str] = {}
    for source in container(manifests).get("envFrom", []):
        name = source["configMapRef"]["name"]
        (settings,) = [
            m for m in manifests if m["kind"] == "ConfigMap" and m["metadata"]["name"] == name
        ]
        environment.update(settings["data"])
    for variable in container(manifests)["env"]:
        if "value" in variable:
            value = _REFERENCE.sub(lambda match: environment[match.group(1)], variable["value"])
        elif "fieldRef" in variable["valueFrom"]:
            value = fields[variable["valueFrom"]["fieldRef"]["fieldPath"]]
        else:
            assert not variable["valueFrom"]["secretKeyRef"].get("optional", False)
            value = PLACEHOLDER_KEY
        environment[variable["name"]] = value
    return environment


def member_settings(
    manifests: list[Manifest], ordinal: int, monkeypatch: pytest.MonkeyPatch
) -> Settings:
    """The Settings pod ``ordinal`` serves with: built from its environment alone (every
    ``CRISSCROSS_*`` variable of this process's own set aside)."""
    environment = member_environment(manifests, ordinal)
    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)
    for name, value in environment.items():
        if name.startswith(ENV_PREFIX):
            monkeypatch.setenv(name, value)
    return Settings()


def test_every_object_validates_strictly(rendered: list[Manifest]) -> None:
    kinds = sorted(manifest["kind"] for manifest in rendered)
    assert kinds == sorted(
        [
            "ConfigMap",
            "PersistentVolumeClaim",
            "PodDisruptionBudget",
            "Service",
            "Service",
            "Service",
            "ServiceAccount",
            "StatefulSet",
        ]
    ), "no Deployment, no HPA: a replica set has a fixed size"
    for version in (KUBERNETES_VERSION, OLDEST_KUBERNETES_VERSION):
        for manifest in rendered:
            validated = kubernetes_validate.validate(manifest, version, strict=True)
            assert validated == version, manifest["kind"]


def test_the_validator_rejects_a_broken_statefulset(rendered: list[Manifest]) -> None:
    broken = copy.deepcopy(statefulset(rendered))
    broken["spec"]["volumeClaimTemplates"][0]["spec"]["accesMode"] = ["ReadWriteOnce"]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


def test_the_pod_is_the_base_pod_plus_what_a_member_needs(
    rendered: list[Manifest], base_pod: Manifest
) -> None:
    """Probes, security, resources, grace period, image, annotations and the data volume stay
    as the base Deployment has them; only the member's additions differ."""
    pod = copy.deepcopy(statefulset(rendered)["spec"]["template"])
    base = copy.deepcopy(base_pod)
    (member,) = pod["spec"]["containers"]
    (server,) = base["spec"]["containers"]
    for key in ("command", "args"):
        # The image's entrypoint (tini) and command (crisscross-serve serve), as in the base.
        assert key not in member, key
        assert key not in server, key
    base_env = {variable["name"]: variable for variable in server.pop("env")}
    member_env = {variable["name"]: variable for variable in member.pop("env")}
    for name, variable in base_env.items():
        if name == "CRISSCROSS_ADMIN_KEYS":
            # Required here: replication calls carry the first admin key.
            expected = copy.deepcopy(variable)
            del expected["valueFrom"]["secretKeyRef"]["optional"]
            assert member_env[name] == expected
        else:
            assert member_env[name] == variable, name
    assert set(member_env) - set(base_env) == {
        *POD_VARIABLES,
        "CRISSCROSS_ADVERTISE_URL",
        "CRISSCROSS_FOLLOW",
    }
    for name, path in POD_VARIABLES.items():
        assert member_env[name]["valueFrom"] == {"fieldRef": {"fieldPath": path}}
    # The same settings ConfigMap, with the member settings merged in (another content hash).
    [member_source] = member.pop("envFrom")
    [base_source] = server.pop("envFrom")
    for source in (member_source, base_source):
        assert re.fullmatch(r"crisscross-settings-\w+", source["configMapRef"]["name"]), source
    member_mounts = {mount["name"]: mount for mount in member.pop("volumeMounts")}
    base_mounts = {mount["name"]: mount for mount in server.pop("volumeMounts")}
    assert {name: member_mounts[name] for name in base_mounts} == base_mounts
    assert set(member_mounts) - set(base_mounts) == {"collections"}
    # The collections volume comes from volumeClaimTemplates, not from the pod's volumes.
    assert pod["spec"].pop("volumes") == base["spec"].pop("volumes")
    assert pod == base


def test_each_member_builds_settings_of_one_replica_set(
    rendered: list[Manifest], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = statefulset(rendered)["spec"]
    replicas = spec["replicas"]
    headless = spec["serviceName"]
    name = statefulset(rendered)["metadata"]["name"]

    def url(ordinal: int) -> str:
        return f"http://{name}-{ordinal}.{headless}.{NAMESPACE}.svc.cluster.local:{PORT}"

    members = [member_settings(rendered, n, monkeypatch) for n in range(replicas)]
    for ordinal, settings in enumerate(members):
        assert settings.own_url == url(ordinal)
        # The same on every pod: pod 0's URL, its own on pod 0, which the server takes as
        # "lead"; the other pods follow pod 0.
        assert settings.follow == url(0), ordinal
        assert settings.collections_dir is not None, "a member keeps live collections"
        assert settings.replica_set_size == replicas
        assert settings.admin_keys, "replication calls carry the first admin key"
        assert settings.read_keys
        assert settings.workers == 1
        assert settings.default_acks == "majority"
        assert settings.host == "0.0.0.0"
        assert settings.port == PORT
    assert members[0].follow == members[0].own_url, "pod 0 leads"
    assert replicas == 3
    # A drain (PDB) leaves a majority.
    majority = replicas // 2 + 1
    pdb = only(rendered, "PodDisruptionBudget")["spec"]
    assert pdb["maxUnavailable"] <= replicas - majority
    pod_labels = spec["template"]["metadata"]["labels"]
    assert pdb["selector"]["matchLabels"].items() <= pod_labels.items()


def test_each_member_keeps_its_collections_on_its_own_volume(rendered: list[Manifest]) -> None:
    spec = statefulset(rendered)["spec"]
    (claim,) = spec["volumeClaimTemplates"]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert spec["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    (mount,) = [
        m for m in container(rendered)["volumeMounts"] if m["name"] == claim["metadata"]["name"]
    ]
    assert not mount.get("readOnly", False)
    settings = configmap(rendered, "crisscross-settings")["data"]
    assert settings["CRISSCROSS_COLLECTIONS_DIR"] == mount["mountPath"]
    assert spec["template"]["spec"]["securityContext"]["fsGroup"] == 10001


def test_the_services_reach_the_members(rendered: list[Manifest]) -> None:
    spec = statefulset(rendered)["spec"]
    pod_labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"] == {"matchLabels": SELECTOR}
    headless = service(rendered, spec["serviceName"])["spec"]
    assert headless["clusterIP"] == "None"
    assert headless["publishNotReadyAddresses"] is True, "a loading leader must be reachable"
    assert headless["selector"].items() <= pod_labels.items()
    reads = service(rendered, "crisscross")["spec"]
    assert reads["selector"].items() <= pod_labels.items()
    writes = service(rendered, "crisscross-leader")["spec"]
    first_pod = f"{only(rendered, 'StatefulSet')['metadata']['name']}-0"
    assert writes["selector"] == {**SELECTOR, "statefulset.kubernetes.io/pod-name": first_pod}
    follow = {v["name"]: v for v in container(rendered)["env"]}["CRISSCROSS_FOLLOW"]["value"]
    assert follow.startswith(f"http://{first_pod}.{spec['serviceName']}.")
    for found in (headless, reads, writes):
        [port] = found["ports"]
        assert port["port"] == PORT
        assert port["targetPort"] == "http"


@pytest.fixture
def with_servicemonitor(tmp_path: Path) -> list[Manifest]:
    """The replicas overlay with the ServiceMonitor component, as a user's overlay adds it."""
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(REPLICAS_OVERLAY, tmp_path)],
                "components": [os.path.relpath(SERVICEMONITOR_COMPONENT, tmp_path)],
            }
        )
    )
    return kustomize(tmp_path)


def test_the_servicemonitor_scrapes_each_member_once(with_servicemonitor: list[Manifest]) -> None:
    """It selects the read Service alone: the headless and write Services cover the same pods
    and would make them scraped two or three times, under other job names."""
    monitor = only(with_servicemonitor, "ServiceMonitor")
    wanted = monitor["spec"]["selector"]["matchLabels"].items()
    selected = [
        found["metadata"]["name"]
        for found in with_servicemonitor
        if found["kind"] == "Service" and wanted <= found["metadata"]["labels"].items()
    ]
    assert selected == ["crisscross"]
