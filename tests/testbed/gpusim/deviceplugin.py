"""Per-node decision of the simulated device plugin + GFD (+ their config-manager sidecars). Pure.

reconcile(...) takes the node, the ClusterPolicy, the device-plugin ConfigMap and the plugin pod
on the node, and returns a Plan (label/annotation patch, status patch, events).

Config pick-up rule (documented in README.md):
  * The plugin runs with a SNAPSHOT of its config, taken when it (re)starts. A restart happens
    when the "epoch" changes: the uid of the nvidia-device-plugin-daemonset pod on the node
    (delete the pod = restart), the gpusim.gpuops.dev/device-plugin-restart annotation (for
    nodes without such a pod), the ClusterPolicy's devicePlugin.config name/default and
    mig.strategy (the operator rolls the DaemonSet), the node label
    nvidia.com/device-plugin.config (config-manager sidecar SIGHUPs the plugin), the node's
    applied MIG state (mig-manager restarts the plugin) and the crash injection.
  * A change of ConfigMap CONTENT alone is NOT picked up (the operator does not watch it).
  * While the plugin is failing (bad config, missing ConfigMap/key, crash injection, invalid
    MIG layout) it is crash-looping: capacity stays as it was, allocatable of the plugin's
    resources drops to 0 (kubelet marks the devices unhealthy), labels stay, the error is in
    the gpusim.gpuops.dev/device-plugin-error annotation + a Warning Event; every reconcile
    retries (a crash-looping container re-reads its config), so fixing the ConfigMap heals it.
  * Where the plugin does not run (deploy label not "true" in operator mode, or
    paused-for-mig-change) allocatable of its resources is 0 and capacity stays.
  * Unhealthy GPUs (annotation gpusim.gpuops.dev/unhealthy-gpus "<n>[:<xid>]"): like the real
    plugin after a critical XID (internal/rm/health.go), the first n GPUs are unhealthy: kubelet
    then counts them in capacity but not in allocatable, so allocatable nvidia.com/gpu is lowered by
    their share (count / GPUs each); one Warning Event "XidCriticalError" per newly unhealthy GPU,
    with the plugin's log line as message. Removing the annotation (the repair) restores allocatable.
    An application XID (13, 31, 43, 45, 68, 109: C.APPLICATION_XIDS) is ignored, as the real plugin
    ignores it: no device turns unhealthy (the DCGM exporter, gpusim/dcgm.py, still reports it).
"""

import json

from gpusim import contract as C
from gpusim import dra
from gpusim import gfd
from gpusim import migparted
from gpusim import sharing as sharing_mod

STOPPED = "stopped"


def effective_mode(mode, cp_exists):
    if mode == "auto":
        return "operator" if cp_exists else "always"
    return mode


def component_runs(mode, cp_exists, label_value, enabled=True):
    """Whether an operator-managed component (DaemonSet) runs on the node."""
    if cp_exists and enabled is False:
        return False
    if effective_mode(mode, cp_exists) == "operator":
        return label_value == "true"
    return label_value in (None, "", "true")


def cp_settings(cp, cfg):
    """(mig strategy, dp config name, dp config default, dp enabled, gfd enabled)."""
    if cp is None:
        d = cfg["defaults"]
        dpc = d.get("device_plugin_config") or {}
        return (d.get("mig_strategy") or "single", dpc.get("name") or "", dpc.get("default") or "",
                True, True)
    spec = cp.get("spec") or {}
    strategy = ((spec.get("mig") or {}).get("strategy")) or "single"
    dp = spec.get("devicePlugin") or {}
    conf = dp.get("config") or {}
    gfd_spec = spec.get("gfd") or {}
    return (strategy, conf.get("name") or "", conf.get("default") or "",
            dp.get("enabled", True) is not False, gfd_spec.get("enabled", True) is not False)


def select_config(cm_name, cm, default_key, label_key):
    """config-manager updateConfigName (FALLBACK_STRATEGIES=empty) -> (key, text) or raise.

    cm: the ConfigMap dict or None (when cm_name is set but it does not exist).
    """
    if not cm_name:
        return "", None
    if cm is None:
        raise sharing_mod.SharingConfigError(
            "ConfigMap %s not found: the plugin pod cannot mount its config" % cm_name)
    data = dict(cm.get("data") or {})
    if not data:
        raise sharing_mod.SharingConfigError("no configuration files available in ConfigMap %s"
                                             % cm_name)
    if label_key:
        if label_key not in data:
            raise sharing_mod.SharingConfigError("specified config %s does not exist" % label_key)
        return label_key, data[label_key]
    if default_key:
        if default_key not in data:
            raise sharing_mod.SharingConfigError("specified config %s does not exist"
                                                 % default_key)
        return default_key, data[default_key]
    return "", None  # fallback "empty": no config file


def read_state(node):
    raw = C.node_annotations(node).get(C.ANN_DP_STATE)
    if not raw:
        return None
    try:
        st = json.loads(raw)
        return st if isinstance(st, dict) else None
    except ValueError:
        return None


def read_mig_state(node, gpus):
    raw = C.node_annotations(node).get(C.ANN_MIG_APPLIED)
    state = None
    if raw:
        try:
            doc = json.loads(raw)
            state = doc.get("gpus") if isinstance(doc, dict) else doc
        except ValueError:
            state = None
    return migparted.normalize_state(state or [], gpus)


class Plan(object):
    def __init__(self):
        self.metadata = {}      # merge patch for metadata: {"labels": {...}, "annotations": {...}}
        self.status = {}        # merge patch for status: {"capacity": {...}, "allocatable": {...}}
        self.events = []        # (type, reason, message)
        self.error = None

    def empty(self):
        return not self.metadata and not self.status

    def __repr__(self):
        return "Plan(metadata=%r, status=%r, events=%r)" % (self.metadata, self.status, self.events)


def _patch_map(current, desired, owned):
    """Merge-patch dict turning `current` into `desired` for the keys `owned` accepts."""
    patch = {}
    for k, v in desired.items():
        if current.get(k) != v:
            patch[k] = v
    for k in current:
        if owned(k) and k not in desired:
            patch[k] = None
    return patch


def _quantity_int(value):
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def reconcile(node, product, cp, cm, dp_pod_uid, cfg):
    """Compute the Plan for one GPU node.

    node: node dict; product: catalog dict (None = not a GPU node / unknown product);
    cp: ClusterPolicy dict or None; cm: the device-plugin ConfigMap named by the policy (or None);
    dp_pod_uid: uid of the nvidia-device-plugin-daemonset pod on the node ("" if none); cfg: sim cfg, with
    ``gpucluster_active`` true while the operator follows a GPUCluster (gpusim/gpucluster.py): then, as with a
    ClusterPolicy, the deploy labels decide, and the GPUCluster's operator sweeps the device plugin's and GFD's.
    """
    plan = Plan()
    if product is None:
        return plan
    labels = C.node_labels(node)
    ann = C.node_annotations(node)
    _name, gpus = C.node_product_and_count(node, cfg.get("default_gpus", 8))
    strategy, cm_name, default_key, dp_enabled, gfd_enabled = cp_settings(cp, cfg)
    cp_exists = cp is not None or bool(cfg.get("gpucluster_active"))
    dp_runs = component_runs(cfg["device_plugin"], cp_exists, labels.get(C.L_DEPLOY_DP), dp_enabled)
    gfd_runs = component_runs(cfg["gfd"], cp_exists, labels.get(C.L_DEPLOY_GFD), gfd_enabled)
    mig_state = read_mig_state(node, gpus)
    inject = C.injections(node)
    label_key = labels.get(C.L_DP_CONFIG, "")
    epoch = C.stable_hash([dp_pod_uid or "", ann.get(C.ANN_DP_RESTART, ""), cm_name, default_key,
                           strategy, label_key, ann.get(C.ANN_MIG_APPLIED, ""),
                           C.INJECT_DP_CRASH in inject])
    errors = []
    if dp_runs or gfd_runs:
        new_state, config, config_ok = _snapshot(read_state(node) or {}, epoch, cm_name, cm,
                                                 default_key, label_key, errors)
    else:
        new_state, config, config_ok = _stopped_state(read_state(node) or {}), None, False
    if dp_runs and config_ok and C.INJECT_DP_CRASH in inject:
        errors.append("plugin: injected crash (gpusim.gpuops.dev/inject=device-plugin-crash)")
    plugin_ok = dp_runs and config_ok and C.INJECT_DP_CRASH not in inject
    count, xid = C.unhealthy_gpus(node)
    unhealthy = min(count, gpus) if plugin_ok and xid not in C.APPLICATION_XIDS else 0
    if plugin_ok:
        _health(plan, node, new_state, unhealthy, gpus)
    status = _status_patch(node, product, mig_state, strategy, config, plugin_ok, errors,
                           (unhealthy, gpus))
    if gfd_runs and config_ok:
        try:
            eff = config if config is not None else sharing_mod.empty_config()
            desired_labels = gfd.gfd_labels(product, mig_state, strategy, eff, cfg["driver"])
            label_patch = _patch_map(labels, desired_labels, gfd.is_owned_label)
            if label_patch:
                plan.metadata["labels"] = label_patch
        except gfd.PluginError as exc:
            errors.append("gfd: %s" % exc)
    _annotate(plan, ann, errors, new_state)
    if status:
        plan.status = status
    return plan


def _stopped_state(old):
    """Neither the plugin nor GFD runs: keep the last snapshot, epoch "stopped"."""
    return {"epoch": STOPPED, "config": old.get("config"), "key": old.get("key", ""),
            "hash": old.get("hash", ""), "cm": old.get("cm", "")}


def _snapshot(old, epoch, cm_name, cm, default_key, label_key, errors):
    """(state, config, config ok): the running snapshot while the epoch holds and it had no
    error, else a new snapshot of the selected config (a (re)start); errors are appended."""
    if old.get("epoch") == epoch and not old.get("error"):
        return dict(old), old.get("config"), True
    try:
        key, text = select_config(cm_name, cm, default_key, label_key)
        config = sharing_mod.parse(text) if text is not None else None
    except sharing_mod.SharingConfigError as exc:
        errors.append("config: %s" % exc)
        return ({"epoch": epoch, "config": old.get("config"), "key": old.get("key", ""),
                 "hash": old.get("hash", ""), "cm": cm_name, "error": str(exc)}, None, False)
    return ({"epoch": epoch, "config": config, "key": key, "cm": cm_name,
             "hash": C.stable_hash(text) if text is not None else ""}, config, True)


def _health(plan, node, new_state, unhealthy, gpus):
    """Record the unhealthy GPU count in the plugin's state; an XID Event per newly unhealthy GPU."""
    before = int((read_state(node) or {}).get("unhealthy") or 0)
    if unhealthy:
        new_state["unhealthy"] = unhealthy
    else:
        new_state.pop("unhealthy", None)
    xid = C.unhealthy_gpus(node)[1]
    for minor in range(min(before, gpus), unhealthy):
        plan.events.append(("Warning", "XidCriticalError",
                            "XidCriticalError: Xid=%d on Device=%s; marking device as unhealthy."
                            % (xid, dra.gpu_uuid(C.node_name(node), minor))))


def _healthy(desired, unhealthy, gpus):
    """Allocatable: ``desired`` with the unhealthy GPUs' share of nvidia.com/gpu taken away."""
    out = dict(desired)
    total = _quantity_int(out.get(C.GPU_RESOURCE))
    if unhealthy and total and gpus:
        out[C.GPU_RESOURCE] = str(max(total - unhealthy * (total // gpus), 0))
    return out


def _status_patch(node, product, mig_state, strategy, config, plugin_ok, errors, health=(0, 0)):
    """Capacity/allocatable merge patch: the plugin's resources while it runs healthy (less the
    unhealthy GPUs' share in allocatable, ``health`` = (unhealthy, GPUs)), else allocatable 0 for
    the resources it manages (capacity stays)."""
    capacity = (node.get("status") or {}).get("capacity") or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    if plugin_ok:
        try:
            resources = gfd.plugin_resources(product, mig_state, strategy, config)
        except gfd.PluginError as exc:
            errors.append("plugin: %s" % exc)
        else:
            desired = {k: str(v) for k, v in resources.items()}
            cap = _patch_map(capacity, desired, gfd.is_managed_resource)
            alloc = _patch_map(allocatable, _healthy(desired, *health), gfd.is_managed_resource)
            return {k: v for k, v in (("capacity", cap), ("allocatable", alloc)) if v}
    alloc = {k: "0" for k in capacity
             if gfd.is_managed_resource(k) and _quantity_int(allocatable.get(k)) != 0}
    return {"allocatable": alloc} if alloc else {}


def _annotate(plan, ann, errors, new_state):
    """The error and state annotations (and an Event when the error appears or clears)."""
    error_text = "; ".join(errors) if errors else None
    plan.error = error_text
    ann_patch = {}
    if error_text != ann.get(C.ANN_DP_ERROR):
        ann_patch[C.ANN_DP_ERROR] = error_text
        if error_text:
            plan.events.append(("Warning", "DevicePluginFailed", error_text))
        elif ann.get(C.ANN_DP_ERROR):
            plan.events.append(("Normal", "DevicePluginHealthy",
                                "device plugin running with config %r"
                                % (new_state.get("key") or "<none>")))
    state_text = C.dumps(new_state) if new_state else None
    if state_text and state_text != ann.get(C.ANN_DP_STATE):
        ann_patch[C.ANN_DP_STATE] = state_text
    if ann_patch:
        plan.metadata["annotations"] = ann_patch
