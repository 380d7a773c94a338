"""The Kubernetes manifests (``deploy/kubernetes``), rendered by ``kubectl kustomize`` and checked
statically.

Tested: each overlay (cpu, gpu) renders; every object validates, in strict mode (no unknown
field), against the Kubernetes OpenAPI schemas that kubernetes-validate ships for
:data:`KUBERNETES_VERSION` and :data:`OLDEST_KUBERNETES_VERSION`, and the validator demonstrably
rejects a misspelled field or a wrong type; the pod's ``CRISSCROSS_*`` variables (literal, from
the Secret and from the settings ConfigMap) are all fields of :class:`service.settings.Settings`
and together build valid Settings; the probes, security context, volumes, grace period, image,
GPU request, HPA, PDB and Service agree with the service and with each other; the optional
ServiceMonitor component composes with an overlay and selects the Service's metrics port
(checked structurally: its CRD is not in kubernetes-validate).

Not tested: nothing is applied to a cluster (there is none here), so admission, scheduling onto
GPU nodes, the storage class's ReadOnlyMany support, the probes against a running pod and the
HPA's scaling are unverified; the container image itself is tested elsewhere.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import kubernetes_validate
import pytest
import yaml

from service.runtime.workers import STOP_MARGIN_S
from service.settings import FaissDevice, ProviderChoice, Settings
from tests.conftest import REQUIRE_TOOLS_VARIABLE, require_tools
from tests.deploy.conftest import DEPLOY_ROOT

KUBERNETES_ROOT = DEPLOY_ROOT / "kubernetes"
OVERLAYS = ("cpu", "gpu")
SERVICEMONITOR_COMPONENT = KUBERNETES_ROOT / "components" / "servicemonitor"
# The newest Kubernetes whose schemas kubernetes-validate (pinned in the dev extra) ships, and
# the oldest the manifests claim to suit (PDB unhealthyPodEvictionPolicy is GA since 1.31).
KUBERNETES_VERSION = "1.37"
OLDEST_KUBERNETES_VERSION = "1.31"
# kubectl 1.27 or newer embeds it (labels.includeTemplates, components, patches with targets);
# tested with kustomize 5.5 (kubectl 1.32). Debian 12's kubernetes-client (1.20) is too old.
MIN_KUSTOMIZE = (5, 0, 0)
ENV_PREFIX = "CRISSCROSS_"
PORT = 8000
UID = 10001
DATA_MOUNT = Path("/data")
IMAGE_TAGS = {"cpu": "0.1.0-cpu", "gpu": "0.1.0-cuda"}
GPU_RESOURCE = "nvidia.com/gpu"
SELECTOR = {"app.kubernetes.io/name": "crisscross", "app.kubernetes.io/component": "server"}
# Stands in for the Secret's read key when the settings are built here.
PLACEHOLDER_KEY = "k" * 32
# Seconds the kubelet's SIGKILL must come after the service's own drain bound.
GRACE_MARGIN_S = 5

Manifest = dict[str, Any]


@functools.cache
def kustomize_version(kubectl: str) -> tuple[int, ...] | None:
    """The version of the kustomize built into ``kubectl``; None when it does not say (kubectl
    before 1.24, e.g. Debian 12's kubernetes-client 1.20)."""
    completed = subprocess.run(
        [kubectl, "version", "--client", "--output=json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if completed.returncode != 0:
        return None
    found = re.fullmatch(
        r"v?(\d+)\.(\d+)\.(\d+)", json.loads(completed.stdout).get("kustomizeVersion", "")
    )
    return tuple(int(part) for part in found.groups()) if found else None


def require_kubectl() -> str:
    """kubectl with a kustomize new enough for these manifests; an older one counts as missing
    (skipped here, failed where ``CRISSCROSS_REQUIRE_TEST_TOOLS=1``)."""
    kubectl = require_tools("kubectl")["kubectl"]
    version = kustomize_version(kubectl)
    if version is None or version < MIN_KUSTOMIZE:
        found = "an unknown version" if version is None else ".".join(map(str, version))
        wanted = ".".join(map(str, MIN_KUSTOMIZE))
        message = f"{kubectl} embeds kustomize {found}; these manifests need {wanted} or newer"
        if os.environ.get(REQUIRE_TOOLS_VARIABLE) == "1":
            pytest.fail(message)
        pytest.skip(message)
    return kubectl


def kustomize(directory: Path) -> list[Manifest]:
    """The objects ``kubectl kustomize directory`` renders."""
    kubectl = require_kubectl()
    completed = subprocess.run(
        [kubectl, "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return [document for document in yaml.safe_load_all(completed.stdout) if document]


def only(manifests: list[Manifest], kind: str) -> Manifest:
    """The one object of ``kind``."""
    found = [manifest for manifest in manifests if manifest["kind"] == kind]
    assert len(found) == 1, f"{len(found)} objects of kind {kind}"
    return found[0]


def server_container(manifests: list[Manifest]) -> Manifest:
    containers = only(manifests, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    container: Manifest = containers[0]
    return container


def pod_environment(manifests: list[Manifest]) -> dict[str, str | None]:
    """Every variable the pod gets: its literal value, or None for one read from a Secret (with
    ``optional`` ones left out); the settings ConfigMap's keys come first, ``env`` overrides."""
    container = server_container(manifests)
    configmaps = {
        manifest["metadata"]["name"]: manifest
        for manifest in manifests
        if manifest["kind"] == "ConfigMap"
    }
    environment: dict[str, str | None] = {}
    for source in container.get("envFrom", []):
        assert set(source) == {"configMapRef"}, source
        assert "prefix" not in source
        environment.update(configmaps[source["configMapRef"]["name"]]["data"])
    for variable in container.get("env", []):
        if "value" in variable:
            environment[variable["name"]] = variable["value"]
            continue
        reference = variable["valueFrom"]["secretKeyRef"]
        if not reference.get("optional", False):
            environment[variable["name"]] = None
    return environment


def environment_names(manifests: list[Manifest]) -> set[str]:
    """Every variable name the pod may get, optional Secret keys included."""
    container = server_container(manifests)
    names = {variable["name"] for variable in container.get("env", [])}
    for manifest in manifests:
        if manifest["kind"] == "ConfigMap":
            names.update(manifest["data"])
    return names


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture(scope="module")
def rendered(overlay: str) -> list[Manifest]:
    return kustomize(KUBERNETES_ROOT / "overlays" / overlay)


@pytest.fixture
def pod_settings(rendered: list[Manifest], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The Settings the pod's environment builds (Secret values stand in), nothing else set."""
    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)
    for name, value in pod_environment(rendered).items():
        monkeypatch.setenv(name, PLACEHOLDER_KEY if value is None else value)
    return Settings()


def test_every_object_validates_strictly(rendered: list[Manifest]) -> None:
    kinds = sorted(manifest["kind"] for manifest in rendered)
    assert kinds == sorted(
        [
            "ConfigMap",
            "Deployment",
            "HorizontalPodAutoscaler",
            "PersistentVolumeClaim",
            "PodDisruptionBudget",
            "Service",
            "ServiceAccount",
        ]
    )
    for version in (KUBERNETES_VERSION, OLDEST_KUBERNETES_VERSION):
        for manifest in rendered:
            validated = kubernetes_validate.validate(manifest, version, strict=True)
            assert validated == version, manifest["kind"]


def _misspell_security_field(deployment: Manifest) -> None:
    context = deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    context["readOnlyRootFileSystem"] = context.pop("readOnlyRootFilesystem")


def _unknown_pod_field(deployment: Manifest) -> None:
    deployment["spec"]["template"]["spec"]["terminationGracePeriod"] = 60


def _replicas_as_text(deployment: Manifest) -> None:
    deployment["spec"]["replicas"] = "two"


def _port_as_text(deployment: Manifest) -> None:
    deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "http"


def _no_image_field(deployment: Manifest) -> None:
    deployment["spec"]["template"]["spec"]["containers"][0]["imag"] = "crisscross"


@pytest.mark.parametrize(
    "break_it",
    [
        _misspell_security_field,
        _unknown_pod_field,
        _replicas_as_text,
        _port_as_text,
        _no_image_field,
    ],
)
def test_validator_rejects_a_broken_deployment(
    rendered: list[Manifest], break_it: Callable[[Manifest], None]
) -> None:
    """A misspelled field deep in the pod, or a wrong type, fails: the validation above is not
    vacuous."""
    deployment = copy.deepcopy(only(rendered, "Deployment"))
    break_it(deployment)
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)


def test_every_variable_is_a_setting(rendered: list[Manifest]) -> None:
    names = environment_names(rendered)
    assert names
    assert all(name.startswith(ENV_PREFIX) for name in names), sorted(names)
    fields = {name.removeprefix(ENV_PREFIX).lower() for name in names}
    assert fields <= set(Settings.model_fields), sorted(fields - set(Settings.model_fields))


def test_pod_environment_builds_settings_that_match_the_pod(
    rendered: list[Manifest], pod_settings: Settings
) -> None:
    container = server_container(rendered)
    assert pod_settings.host == "0.0.0.0"
    assert pod_settings.port == PORT
    assert [port["containerPort"] for port in container["ports"]] == [PORT]
    assert pod_settings.read_keys, "the service refuses 0.0.0.0 without read keys"
    assert DATA_MOUNT in pod_settings.bundles_root.parents
    assert DATA_MOUNT in pod_settings.variants_root.parents
    # "0" would count the node's cores (the pod's CPU affinity), not its CPU request.
    assert pod_settings.workers >= 1
    assert pod_settings.shutdown_delay_s > 0, "endpoints need time to drop the pod"


def test_grace_period_outlasts_the_drain(rendered: list[Manifest], pod_settings: Settings) -> None:
    """SIGKILL comes only after the service could drain on its own: the readiness delay, then
    uvicorn's graceful shutdown, then the encoder queues (a graceful_shutdown_s more), or the
    supervisor's kill of a worker past its bound."""
    grace = only(rendered, "Deployment")["spec"]["template"]["spec"][
        "terminationGracePeriodSeconds"
    ]
    drain = (
        pod_settings.shutdown_delay_s
        + pod_settings.graceful_shutdown_s
        + max(pod_settings.graceful_shutdown_s, STOP_MARGIN_S)
    )
    assert grace >= drain + GRACE_MARGIN_S


def test_probes_use_the_service_endpoints(rendered: list[Manifest]) -> None:
    container = server_container(rendered)
    named_ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    expected = {"startupProbe": "/readyz", "readinessProbe": "/readyz", "livenessProbe": "/healthz"}
    for probe_name, path in expected.items():
        probe = container[probe_name]["httpGet"]
        assert probe["path"] == path, probe_name
        port = probe["port"]
        assert named_ports.get(port, port) == PORT, probe_name
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300, "loading takes a while"


def test_pod_runs_locked_down(rendered: list[Manifest]) -> None:
    pod = only(rendered, "Deployment")["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["enableServiceLinks"] is False, "links inject CRISSCROSS_PORT=tcp://..."
    assert pod["serviceAccountName"] == only(rendered, "ServiceAccount")["metadata"]["name"]
    assert only(rendered, "ServiceAccount")["automountServiceAccountToken"] is False
    pod_context = pod["securityContext"]
    assert pod_context["runAsNonRoot"] is True
    assert pod_context["runAsUser"] == pod_context["runAsGroup"] == pod_context["fsGroup"] == UID
    assert pod_context["seccompProfile"] == {"type": "RuntimeDefault"}
    context = server_container(rendered)["securityContext"]
    assert context["runAsNonRoot"] is True
    assert context["runAsUser"] == context["runAsGroup"] == UID
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}


def test_volumes_data_read_only_and_tmp_writable(rendered: list[Manifest]) -> None:
    pod = only(rendered, "Deployment")["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    mounts = {mount["mountPath"]: mount for mount in server_container(rendered)["volumeMounts"]}
    assert set(mounts) == {str(DATA_MOUNT), "/tmp"}
    data = mounts[str(DATA_MOUNT)]
    assert data["readOnly"] is True
    claim = volumes[data["name"]]["persistentVolumeClaim"]
    assert claim["readOnly"] is True
    assert claim["claimName"] == only(rendered, "PersistentVolumeClaim")["metadata"]["name"]
    tmp = mounts["/tmp"]
    assert not tmp.get("readOnly", False)
    assert "emptyDir" in volumes[tmp["name"]]


def test_metrics_are_scrapable(rendered: list[Manifest]) -> None:
    annotations = only(rendered, "Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == str(PORT)
    assert annotations["prometheus.io/path"] == "/metrics"


def test_selectors_hpa_pdb_and_service_agree(rendered: list[Manifest]) -> None:
    deployment = only(rendered, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"] == {"matchLabels": SELECTOR}
    assert SELECTOR.items() <= pod_labels.items()
    assert "replicas" not in deployment["spec"], "the HPA owns the replica count"

    hpa = only(rendered, "HorizontalPodAutoscaler")["spec"]
    assert hpa["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": deployment["metadata"]["name"],
    }
    assert 2 <= hpa["minReplicas"] < hpa["maxReplicas"]
    [metric] = hpa["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert metric["resource"]["target"]["type"] == "Utilization"
    assert "cpu" in server_container(rendered)["resources"]["requests"], "utilisation needs it"

    pdb = only(rendered, "PodDisruptionBudget")["spec"]
    assert pdb["selector"]["matchLabels"].items() <= pod_labels.items()
    assert pdb.get("maxUnavailable") == 1 or pdb.get("minAvailable") == 1

    service = only(rendered, "Service")["spec"]
    assert service["selector"].items() <= pod_labels.items()
    named_ports = {
        port["name"]: port["containerPort"] for port in server_container(rendered)["ports"]
    }
    [service_port] = service["ports"]
    target = service_port["targetPort"]
    assert named_ports.get(target, target) == PORT


def test_overlay_image_and_accelerator(
    rendered: list[Manifest], overlay: str, pod_settings: Settings
) -> None:
    container = server_container(rendered)
    pod = only(rendered, "Deployment")["spec"]["template"]["spec"]
    assert container["image"] == f"crisscross:{IMAGE_TAGS[overlay]}"
    resources = container["resources"]
    assert "cpu" not in resources.get("limits", {}), "no CPU throttling of the encoder"
    assert "memory" in resources["limits"]
    assert pod_settings.providers in get_args(ProviderChoice)
    assert pod_settings.faiss_device in get_args(FaissDevice)
    if overlay == "gpu":
        assert resources["requests"][GPU_RESOURCE] == resources["limits"][GPU_RESOURCE] == 1
        assert {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"} in pod[
            "tolerations"
        ]
        assert pod_settings.providers == "cuda", "refuse to start without CUDA"
        assert pod_settings.faiss_device in {"auto", "gpu"}
    else:
        assert GPU_RESOURCE not in resources.get("requests", {})
        assert GPU_RESOURCE not in resources.get("limits", {})
        assert "tolerations" not in pod
        assert pod_settings.providers == "cpu"
        assert pod_settings.faiss_device == "cpu"


def test_gpu_overlay_has_more_memory() -> None:
    memory = {
        overlay: server_container(kustomize(KUBERNETES_ROOT / "overlays" / overlay))["resources"]
        for overlay in OVERLAYS
    }
    units = {"Gi": 1 << 30, "Mi": 1 << 20}

    def size(quantity: str) -> int:
        return int(quantity[:-2]) * units[quantity[-2:]]

    for kind in ("requests", "limits"):
        assert size(memory["gpu"][kind]["memory"]) > size(memory["cpu"][kind]["memory"]), kind


@pytest.fixture
def with_servicemonitor(tmp_path: Path) -> list[Manifest]:
    """The cpu overlay with the ServiceMonitor component, as a user's overlay would add it."""
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                # kustomize takes relative paths only.
                "resources": [os.path.relpath(KUBERNETES_ROOT / "overlays" / "cpu", tmp_path)],
                "components": [os.path.relpath(SERVICEMONITOR_COMPONENT, tmp_path)],
            }
        )
    )
    return kustomize(tmp_path)


def test_servicemonitor_component_selects_the_metrics_port(
    with_servicemonitor: list[Manifest],
) -> None:
    monitor = only(with_servicemonitor, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(monitor) == {"apiVersion", "kind", "metadata", "spec"}
    assert set(monitor["spec"]) == {"selector", "endpoints"}
    service = only(with_servicemonitor, "Service")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= (
        service["metadata"]["labels"].items()
    )
    [endpoint] = monitor["spec"]["endpoints"]
    assert set(endpoint) <= {"port", "path", "interval", "scrapeTimeout"}
    assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    for manifest in with_servicemonitor:
        if manifest["kind"] != "ServiceMonitor":
            kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
