"""Simulated OLM v0 (pure part): Subscription -> InstallPlan -> CSV, CatalogSource status.

Behaviour modelled on operator-lifecycle-manager (catalog operator + olm operator):
  * a Subscription names package/channel/source/sourceNamespace (+ startingCSV,
    installPlanApproval); resolution fails with condition ResolutionFailed
    (reason ConstraintsNotSatisfiable) when the catalog, package, channel or startingCSV is unknown;
  * resolution creates InstallPlan `install-xxxxx` (owner: the Subscription) with
    spec.approval/approved; Manual -> status.phase RequiresApproval and Subscription condition
    InstallPlanPending/RequiresApproval, state UpgradePending, until spec.approved=true;
  * an approved plan goes Installing -> Complete and creates the CSV; the CSV is Succeeded when
    exactly one OperatorGroup in the namespace selects an install mode the CSV supports
    (else Failed: NoOperatorGroup / TooManyOperatorGroups / UnsupportedOperatorGroup);
  * after install the Subscription has installedCSV/currentCSV and state AtLatestKnown; when the
    installed CSV is not the channel head (startingCSV pin), a new InstallPlan for the head is
    created (upgrade; needs approval again when Manual).
"""

import copy
import json
import random
import string

from gpusim import bundles

GROUP = "operators.coreos.com"
V1A1 = GROUP + "/v1alpha1"


def component_label(pkg_name, namespace):
    """operators.coreos.com/<package>.<namespace>; the name part is cut to the 63-byte limit."""
    name = ("%s.%s" % (pkg_name, namespace))[:63].rstrip("-._")
    return "operators.coreos.com/" + name


def plan_name(rng=random):
    return "install-" + "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(5))


def csv_version(csv_name):
    """'gpu-operator-certified.v26.7.0' -> '26.7.0'; 'nfd.4.18.0-2025...' -> '4.18.0-2025...'."""
    rest = csv_name.split(".", 1)[1] if "." in csv_name else csv_name
    return rest[1:] if rest.startswith("v") and rest[1:2].isdigit() else rest


class Resolution(object):
    def __init__(self, csv=None, channel=None, error=None, package=None):
        self.csv = csv
        self.channel = channel
        self.error = error
        self.package = package

    def __repr__(self):
        return "Resolution(csv=%r, channel=%r, error=%r)" % (self.csv, self.channel, self.error)


def catalog_serves(catalog_name, olm_cfg):
    serving = olm_cfg.get("serving_catalogs") or []
    return not serving or catalog_name in serving


def resolve(sub, olm_cfg, catalog_source_exists, installed_csv=None):
    """Which CSV the Subscription should run next (pure).

    catalog_source_exists: bool, whether spec.source exists in spec.sourceNamespace.
    installed_csv: status.installedCSV (None on first install).
    """
    spec = sub.get("spec") or {}
    subname = sub["metadata"]["name"]
    pkg_name = spec.get("name") or ""
    source = spec.get("source") or ""
    source_ns = spec.get("sourceNamespace") or ""
    if not catalog_source_exists:
        return Resolution(error="constraints not satisfiable: no operators found from catalog %s "
                                "in namespace %s referenced by subscription %s"
                                % (source, source_ns, subname))
    packages = olm_cfg.get("packages") or {}
    pkg = packages.get(pkg_name)
    if pkg is None or not catalog_serves(source, olm_cfg):
        return Resolution(error="constraints not satisfiable: no operators found in package %s in "
                                "the catalog referenced by subscription %s" % (pkg_name, subname))
    channel = spec.get("channel") or pkg.get("default_channel") or sorted(pkg["channels"])[0]
    entries = pkg["channels"].get(channel)
    if not entries:
        return Resolution(error="constraints not satisfiable: no operators found in channel %s of "
                                "package %s in the catalog referenced by subscription %s"
                                % (channel, pkg_name, subname))
    head = entries[-1]
    starting = spec.get("startingCSV")
    if installed_csv:
        return Resolution(csv=head, channel=channel, package=pkg_name)
    if starting:
        if starting not in entries:
            return Resolution(error="constraints not satisfiable: no operators found with name %s "
                                    "in channel %s of package %s in the catalog referenced by "
                                    "subscription %s" % (starting, channel, pkg_name, subname))
        return Resolution(csv=starting, channel=channel, package=pkg_name)
    return Resolution(csv=head, channel=channel, package=pkg_name)


def install_mode_for(operator_group, namespace):
    """The InstallModeType an OperatorGroup asks for."""
    spec = operator_group.get("spec") or {}
    targets = [t for t in (spec.get("targetNamespaces") or []) if t]
    if spec.get("selector") and not targets:
        return "MultiNamespace"
    if not targets:
        return "AllNamespaces"
    if len(targets) == 1:
        return "OwnNamespace" if targets[0] == namespace else "SingleNamespace"
    return "MultiNamespace"


def csv_phase(csv_spec, operator_groups, namespace):
    """(phase, reason, message, operator group or None) for a CSV in `namespace`."""
    if not operator_groups:
        return "Failed", "NoOperatorGroup", "csv in namespace with no operatorgroups", None
    if len(operator_groups) > 1:
        return ("Failed", "TooManyOperatorGroups",
                "csv created in namespace with multiple operatorgroups, can't pick one "
                "automatically", None)
    og = operator_groups[0]
    mode = install_mode_for(og, namespace)
    supported = {m.get("type") for m in csv_spec.get("installModes") or [] if m.get("supported")}
    if mode not in supported:
        what = {"AllNamespaces": "cannot configure to watch all namespaces",
                "OwnNamespace": "cannot configure to watch own namespace",
                "SingleNamespace": "cannot configure to watch one namespace",
                "MultiNamespace": "cannot configure to watch multiple namespaces"}[mode]
        return ("Failed", "UnsupportedOperatorGroup",
                "%s InstallModeType not supported, %s" % (mode, what), og)
    return "Succeeded", "InstallSucceeded", "install strategy completed with no errors", og


def make_installplan(sub, csv_name, approval, sub_uid=None, rng=random):
    md = sub["metadata"]
    spec = sub.get("spec") or {}
    manual = approval == "Manual"
    return {
        "apiVersion": V1A1, "kind": "InstallPlan",
        "metadata": {
            "name": plan_name(rng), "namespace": md["namespace"],
            "labels": {component_label(spec.get("name") or "", md["namespace"]): ""},
            "ownerReferences": [{"apiVersion": V1A1, "kind": "Subscription", "name": md["name"],
                                 "uid": sub_uid or md.get("uid"), "blockOwnerDeletion": False,
                                 "controller": False}],
        },
        "spec": {"approval": "Manual" if manual else "Automatic", "approved": not manual,
                 "clusterServiceVersionNames": [csv_name], "generation": 1},
    }


def installplan_status(phase, sub, csv_name, step_status="Unknown", now=""):
    spec = sub.get("spec") or {}
    status = {
        "phase": phase,
        "catalogSources": [spec.get("source") or ""],
        "plan": [{"resolving": csv_name, "status": step_status,
                  "resource": {"group": GROUP, "version": "v1alpha1",
                               "kind": "ClusterServiceVersion", "name": csv_name,
                               "sourceName": spec.get("source") or "",
                               "sourceNamespace": spec.get("sourceNamespace") or ""}}],
    }
    if phase == "Complete":
        status["conditions"] = [{"type": "Installed", "status": "True",
                                 "lastTransitionTime": now, "lastUpdateTime": now}]
    elif phase == "RequiresApproval":
        status["conditions"] = []
    return status


def make_csv(bundle_doc, csv_name, pkg_name, channel_entries, namespace, og_name=None,
             targets=None):
    """The ClusterServiceVersion object (metadata + spec) OLM would create from the bundle."""
    doc = copy.deepcopy(bundle_doc)
    md = doc.setdefault("metadata", {})
    ann = dict(md.get("annotations") or {})
    version = csv_version(csv_name)
    if "olm.skipRange" in ann:
        low = ann["olm.skipRange"].split("<")[0].strip() or ">=0.0.0"
        ann["olm.skipRange"] = "%s <%s" % (low, version.split("-")[0])
    if og_name is not None:
        ann["olm.operatorGroup"] = og_name
        ann["olm.operatorNamespace"] = namespace
        ann["olm.targetNamespaces"] = ",".join(targets or [])
    labels = dict(md.get("labels") or {})
    labels[component_label(pkg_name, namespace)] = ""
    doc["apiVersion"] = V1A1
    doc["kind"] = "ClusterServiceVersion"
    doc["metadata"] = {"name": csv_name, "namespace": namespace, "annotations": ann,
                       "labels": labels}
    spec = doc.setdefault("spec", {})
    spec["version"] = version
    idx = channel_entries.index(csv_name) if csv_name in channel_entries else -1
    if idx > 0:
        spec["replaces"] = channel_entries[idx - 1]
    else:
        spec.pop("replaces", None)
    spec.setdefault("displayName", pkg_name)
    spec.setdefault("install", {"strategy": "deployment", "spec": {"deployments": []}})
    return doc


def alm_examples(csv):
    raw = ((csv.get("metadata") or {}).get("annotations") or {}).get("alm-examples") or "[]"
    try:
        return json.loads(raw)
    except ValueError:
        return []


def csv_status(phase, reason, message, now):
    cond = {"phase": phase, "reason": reason, "message": message,
            "lastTransitionTime": now, "lastUpdateTime": now}
    return {"phase": phase, "reason": reason, "message": message, "lastTransitionTime": now,
            "lastUpdateTime": now, "conditions": [cond], "requirementStatus": []}


def set_condition(conditions, ctype, status, reason="", message="", now=""):
    """Return a new condition list with `ctype` set (or removed when status is None)."""
    out = [c for c in conditions or [] if c.get("type") != ctype]
    if status is None:
        return out
    old = next((c for c in conditions or [] if c.get("type") == ctype), None)
    ltt = old.get("lastTransitionTime") if old and old.get("status") == status else now
    cond = {"type": ctype, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": ltt or now}
    out.append(cond)
    return out


def default_catalog_sources(olm_cfg, operatorhub):
    """The default CatalogSources that should exist given OperatorHub cluster's spec."""
    spec = (operatorhub or {}).get("spec") or {}
    disable_all = bool(spec.get("disableAllDefaultSources"))
    per_source = {s.get("name"): bool(s.get("disabled")) for s in spec.get("sources") or []}
    out = []
    for cs in olm_cfg.get("default_catalog_sources") or []:
        disabled = per_source.get(cs["name"], disable_all)
        if not disabled:
            out.append(cs)
    return out


def catalog_source_object(cs):
    return {
        "apiVersion": V1A1, "kind": "CatalogSource",
        "metadata": {"name": cs["name"], "namespace": cs.get("namespace", "openshift-marketplace"),
                     "labels": {"gpusim.gpuops.dev/default-source": "true"}},
        "spec": {"sourceType": "grpc", "displayName": cs.get("displayName", cs["name"]),
                 "publisher": cs.get("publisher", ""),
                 "image": cs.get("image", "catalog.invalid/%s:latest" % cs["name"]),
                 "updateStrategy": {"registryPoll": {"interval": "10m"}}},
    }


def catalog_source_status(cs, now):
    md = cs["metadata"]
    return {"connectionState": {"address": "%s.%s.svc:50051" % (md["name"], md["namespace"]),
                                "lastConnect": now, "lastObservedState": "READY"},
            "registryService": {"createdAt": now, "port": "50051", "protocol": "grpc",
                                "serviceName": md["name"], "serviceNamespace": md["namespace"]}}


def package_manifest(pkg_name, pkg, catalog_ns, olm_cfg, bundle_csvs):
    """A packages.operators.coreos.com/v1 PackageManifest (when that API is served by a CRD)."""
    channels = []
    for ch, entries in sorted(pkg["channels"].items()):
        head = entries[-1]
        csv = bundle_csvs.get(head) or {}
        channels.append({"name": ch, "currentCSV": head,
                         "currentCSVDesc": {"displayName": (csv.get("spec") or {}).get(
                             "displayName", pkg.get("display_name", pkg_name)),
                             "version": csv_version(head),
                             "installModes": (csv.get("spec") or {}).get("installModes") or [],
                             "annotations": ((csv.get("metadata") or {}).get("annotations") or {})},
                         "entries": [{"name": e, "version": csv_version(e)}
                                     for e in reversed(entries)]})
    return {
        "apiVersion": "packages.operators.coreos.com/v1", "kind": "PackageManifest",
        "metadata": {"name": pkg_name, "namespace": catalog_ns,
                     "labels": {"catalog": pkg.get("catalog", ""),
                                "catalog-namespace": catalog_ns}},
        "spec": {},
        "status": {"catalogSource": pkg.get("catalog", ""), "catalogSourceNamespace": catalog_ns,
                   "catalogSourceDisplayName": pkg.get("catalog", ""),
                   "packageName": pkg_name,
                   "defaultChannel": pkg.get("default_channel") or sorted(pkg["channels"])[0],
                   "channels": channels},
    }


def bundle_for(pkg, olm_cfg):
    doc, source = bundles.bundle_csv(pkg.get("bundle") or "", olm_cfg)
    return doc, source
