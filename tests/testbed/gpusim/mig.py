"""Simulated nvidia-mig-manager (pure part): which config, what the node labels become.

Follows NVIDIA/mig-parted pkg/mig/reconfigure/reconfigure.go (see docs/facts.md, MIG manager):
  1. validate the selected config (unknown name / bad file -> state "failed", no "pending");
  2. already applied -> "success" at once;
  3. "pending" + nvidia.com/gpu.deploy.{device-plugin,gpu-feature-discovery,dcgm-exporter,dcgm,
     nvsm} (and .client if present) -> "paused-for-mig-change" unless "false";
  4. apply (mode, then instances; by placement, see placement.py). Failure -> "failed";
     GPU clients in use (a running pod requesting GPU resources) -> "failed", nothing changed;
  5. deploy labels back to "true" (unless "false") and "success".
The timing (delay, injections) is the agent's job; these functions only compute.
"""

import json

from gpusim import contract as C
from gpusim import migparted

DEFAULT_CM = "default-mig-parted-config"
CM_KEY = "config.yaml"


class MissingConfigMap(Exception):
    """The named ConfigMap does not exist: mig-manager's pod cannot start (no state change)."""


def resolve_spec(cp, configmaps, product, cfg):
    """(source description, parsed spec). Raises MissingConfigMap or MigPartedError.

    configmaps: {name: ConfigMap dict} in the operator namespace.
    Custom name (ClusterPolicy spec.migManager.config.name) -> that ConfigMap's config.yaml;
    else the operator's default-mig-parted-config if it exists; else (v26.3+ behaviour) a
    config generated from the GPU's profiles.
    """
    name = ""
    if cp is not None:
        name = (((cp.get("spec") or {}).get("migManager") or {}).get("config") or {}).get("name") or ""
    else:
        name = (cfg.get("defaults") or {}).get("mig_parted_config") or ""
    if name:
        cm = configmaps.get(name)
        if cm is None:
            raise MissingConfigMap("ConfigMap %s not found" % name)
        return "configmap/" + name, _parse_cm(cm, name)
    cm = configmaps.get(DEFAULT_CM)
    if cm is not None:
        return "configmap/" + DEFAULT_CM, _parse_cm(cm, DEFAULT_CM)
    return "generated", migparted.generated_spec(product)


def _parse_cm(cm, name):
    data = cm.get("data") or {}
    if CM_KEY not in data:
        raise migparted.MigPartedError("ConfigMap %s has no key %s" % (name, CM_KEY))
    return migparted.parse_spec(data[CM_KEY])


def read_applied(node, gpus):
    raw = C.node_annotations(node).get(C.ANN_MIG_APPLIED)
    doc = {}
    if raw:
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = {}
    if isinstance(doc, list):
        doc = {"gpus": doc}
    if not isinstance(doc, dict):
        doc = {}
    return doc.get("config", ""), migparted.normalize_state(doc.get("gpus") or [], gpus)


def applied_annotation(config_name, state):
    return C.dumps({"config": config_name, "gpus": state})


def paused_labels(labels):
    """reconcile.go shutdownKubernetesGPUClients."""
    out = {}
    for key in C.MIG_PAUSED_LABELS:
        out[key] = "false" if labels.get(key) == "false" else C.PAUSED
    if labels.get(C.L_DEPLOY_CLIENT):
        out[C.L_DEPLOY_CLIENT] = "false" if labels[C.L_DEPLOY_CLIENT] == "false" else C.PAUSED
    return out


def restored_labels(labels):
    """reconcile.go setState / restartKubernetesGPUClients (maybeSetTrue)."""
    out = {}
    for key in C.MIG_PAUSED_LABELS:
        out[key] = "false" if labels.get(key) == "false" else "true"
    if labels.get(C.L_DEPLOY_CLIENT):
        out[C.L_DEPLOY_CLIENT] = "false" if labels[C.L_DEPLOY_CLIENT] == "false" else "true"
    return out


def _only_changes(current, wanted):
    return {k: v for k, v in wanted.items() if current.get(k) != v}


class Step(object):
    """Outcome of a step: state label, metadata merge patch, event, error."""

    def __init__(self, state, labels=None, annotations=None, event=None, error=None):
        self.state = state
        self.labels = labels or {}
        self.annotations = annotations or {}
        self.event = event
        self.error = error

    def metadata_patch(self):
        md = {}
        if self.labels:
            md["labels"] = self.labels
        if self.annotations:
            md["annotations"] = self.annotations
        return md

    def __repr__(self):
        return "Step(%s, labels=%r, annotations=%r, error=%r)" % (
            self.state, self.labels, self.annotations, self.error)


def _final(node, state, error=None, new_applied=None, event=None):
    labels = C.node_labels(node)
    ann = C.node_annotations(node)
    wanted = restored_labels(labels)
    wanted[C.L_MIG_STATE] = state
    annotations = {}
    if new_applied is not None and new_applied != ann.get(C.ANN_MIG_APPLIED):
        annotations[C.ANN_MIG_APPLIED] = new_applied
    if error:
        annotations[C.ANN_MIG_ERROR] = error
    elif ann.get(C.ANN_MIG_ERROR):
        annotations[C.ANN_MIG_ERROR] = None
    return Step(state, _only_changes(labels, wanted), annotations, event, error)


def _failed(node, error, new_applied=None):
    """The failed final step, with its Warning event (reason MigConfigFailed)."""
    return _final(node, "failed", error, new_applied=new_applied,
                  event=("Warning", "MigConfigFailed", error))


def _select(spec, value):
    """(entries of config ``value``, None) or (None, the validation error)."""
    try:
        return migparted.select(spec, value), None
    except migparted.MigPartedError as exc:
        return None, "failed to validate MIG configuration: %s" % exc


def begin(node, product, spec_or_error, value, gpus):
    """First step for label value `value`. Returns a Step with state success|failed|pending.

    spec_or_error: parsed spec, or a MigPartedError instance (bad/missing config file).
    """
    if isinstance(spec_or_error, Exception):
        return _failed(node, "failed to validate MIG configuration: %s" % spec_or_error)
    entries, err = _select(spec_or_error, value)
    if err:
        return _failed(node, err)
    applied_name, current = read_applied(node, gpus)
    target, err = migparted.apply_config(entries, product, current)
    if err is None and target == current:
        ann = None
        if applied_name != value:
            ann = applied_annotation(value, current)
        return _final(node, "success", new_applied=ann,
                      event=("Normal", "MigConfigApplied",
                             "MIG config %s is already applied" % value))
    labels = C.node_labels(node)
    wanted = paused_labels(labels)
    wanted[C.L_MIG_STATE] = "pending"
    return Step("pending", _only_changes(labels, wanted),
                event=("Normal", "MigConfigPending", "applying MIG config %s" % value))


def finish(node, product, spec, value, gpus, gpu_pods, inject_fail=False):
    """Last step (after the simulated reconfiguration time). gpu_pods: names of running pods
    that use GPU resources on the node."""
    applied_name, current = read_applied(node, gpus)
    if inject_fail:
        return _failed(node, "failed to apply MIG configuration: injected failure "
                             "(gpusim.gpuops.dev/inject=fail)")
    if gpu_pods:
        return _failed(node, "failed to apply MIG configuration: GPUs in use by running pods (%s): "
                             "In use by another client" % ", ".join(sorted(gpu_pods)[:5]))
    entries, err = _select(spec, value)
    if err:
        return _failed(node, err)
    target, err = migparted.apply_config(entries, product, current)
    if err is not None:
        ann = applied_annotation(applied_name, target) if target != current else None
        return _failed(node, "failed to apply MIG configuration: %s" % err, new_applied=ann)
    return _final(node, "success", new_applied=applied_annotation(value, target),
                  event=("Normal", "MigConfigApplied", "MIG config %s applied" % value))
