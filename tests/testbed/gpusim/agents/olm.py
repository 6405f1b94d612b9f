"""Simulated OLM: CatalogSources, Subscriptions, InstallPlans, CSVs (see gpusim/olm.py)."""

import copy
import time

from gpusim import kube as K
from gpusim import olm
from gpusim.controller import Agent
from gpusim.informer import DELETED, obj_key
from gpusim.kube import now_iso

_VOLATILE = ("lastUpdated", "lastUpdateTime", "lastTransitionTime", "lastConnect", "createdAt",
             "startTime")


def _strip(obj):
    """Copy without timestamps, to compare statuses."""
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in _VOLATILE}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


class OLMAgent(Agent):
    name = "olm"
    workers = 2

    def setup(self):
        c = self.ctx
        self.olm_cfg = self.cfg["olm"]
        self.subs = c.informer(K.SUBSCRIPTIONS)
        self.plans = c.informer(K.INSTALLPLANS)
        self.csvs = c.informer(K.CSVS)
        self.sources = c.informer(K.CATALOGSOURCES)
        self.groups = c.informer(K.OPERATORGROUPS)
        self.hubs = c.informer(K.OPERATORHUBS)
        self.due = {}        # installplan uid -> monotonic time the install completes
        self._bundles = {}
        self.subs.add_handler(lambda e, o, old: self.queue.add("sub/" + obj_key(o)))
        self.plans.add_handler(self._on_plan)
        self.csvs.add_handler(lambda e, o, old: self._subs_in(o["metadata"]["namespace"]))
        self.groups.add_handler(lambda e, o, old: self._subs_in(o["metadata"]["namespace"]))
        self.sources.add_handler(self._on_source)
        self.hubs.add_handler(lambda e, o, old: self.queue.add("defaults"))
        self.queue.add("defaults")

    def watched(self):
        return (self.subs, self.plans, self.csvs, self.sources, self.groups, self.hubs)

    # -- event routing --------------------------------------------------------------------

    def _subs_in(self, namespace):
        for key in self.subs.keys():
            if key.startswith(namespace + "/"):
                self.queue.add("sub/" + key)

    def _on_plan(self, etype, obj, old):
        ns = obj["metadata"]["namespace"]
        for ref in obj["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "Subscription":
                self.queue.add("sub/%s/%s" % (ns, ref["name"]))

    def _on_source(self, etype, obj, old):
        if etype != DELETED:
            self.queue.add("cs/" + obj_key(obj))
        else:
            self.queue.add("defaults")
        for key in self.subs.keys():
            self.queue.add("sub/" + key)

    # -- reconcile ------------------------------------------------------------------------

    def reconcile(self, key):
        kind, _, rest = key.partition("/")
        if kind == "defaults":
            self.reconcile_defaults()
        elif kind == "cs":
            self.reconcile_source(rest)
        elif kind == "sub":
            self.reconcile_sub(rest)

    def reconcile_defaults(self):
        if not self.kube.exists(K.CATALOGSOURCES):
            self.queue.add_after("defaults", 10)
            return
        hub = self.hubs.get("cluster")
        wanted = {(cs.get("namespace", "openshift-marketplace"), cs["name"]): cs
                  for cs in olm.default_catalog_sources(self.olm_cfg, hub)}
        for (ns, name), cs in wanted.items():
            if self.sources.get("%s/%s" % (ns, name)) is None:
                self.kube.ensure_namespace(ns)
                try:
                    obj = self.kube.create(K.CATALOGSOURCES, olm.catalog_source_object(cs), ns)
                    self.sources.update_local(obj)
                    self.log.info("created CatalogSource %s/%s", ns, name)
                except K.ApiError as exc:
                    if exc.status != 409:
                        raise
                self.queue.add("cs/%s/%s" % (ns, name))
        for obj in self.sources.items():
            md = obj["metadata"]
            if (md.get("labels") or {}).get("gpusim.gpuops.dev/default-source") != "true":
                continue
            if (md["namespace"], md["name"]) not in wanted:
                self.kube.delete(K.CATALOGSOURCES, md["name"], md["namespace"])
                self.log.info("deleted default CatalogSource %s/%s (OperatorHub)", md["namespace"],
                              md["name"])
        self.reconcile_package_manifests()

    def reconcile_package_manifests(self):
        if not self.kube.exists(K.PACKAGEMANIFESTS):
            return
        for pkg_name, pkg in (self.olm_cfg.get("packages") or {}).items():
            source = next((s for s in self.sources.items()
                           if s["metadata"]["name"] == pkg.get("catalog")), None)
            if source is None:
                continue
            ns = source["metadata"]["namespace"]
            csvs = {}
            for entries in pkg["channels"].values():
                for e in entries:
                    csvs[e] = self.csv_for(pkg, e, pkg_name, entries, ns)
            want = olm.package_manifest(pkg_name, pkg, ns, self.olm_cfg, csvs)
            have = self.kube.get_or_none(K.PACKAGEMANIFESTS, pkg_name, ns)
            if have is None:
                status = want.pop("status")
                have = self.kube.create(K.PACKAGEMANIFESTS, want, ns)
                try:
                    self.kube.merge_patch(K.PACKAGEMANIFESTS, pkg_name, {"status": status}, ns,
                                          subresource="status")
                except K.ApiError:
                    self.kube.merge_patch(K.PACKAGEMANIFESTS, pkg_name, {"status": status}, ns)

    def reconcile_source(self, key):
        obj = self.sources.get(key)
        if obj is None:
            return
        conn = ((obj.get("status") or {}).get("connectionState") or {})
        if conn.get("lastObservedState") == "READY":
            return
        self.patch_status(self.sources, obj, olm.catalog_source_status(obj, now_iso()))

    def csv_for(self, pkg, csv_name, pkg_name, entries, namespace, og=None):
        bundle = pkg.get("bundle") or pkg_name
        if bundle not in self._bundles:
            doc, source = olm.bundle_for(pkg, self.olm_cfg)
            self.log.info("bundle %s from %s", bundle, source)
            self._bundles[bundle] = doc
        targets = None
        og_name = None
        if og is not None:
            og_name = og["metadata"]["name"]
            targets = (og.get("spec") or {}).get("targetNamespaces") or []
        return olm.make_csv(self._bundles[bundle], csv_name, pkg_name, entries, namespace,
                            og_name, targets)

    def _patch_sub_status(self, sub, status):
        old = sub.get("status") or {}
        if _strip(old) == _strip(status):
            return
        status["lastUpdated"] = now_iso()
        self.patch_status(self.subs, sub, status)

    def _catalog_health(self, sub, now):
        out = []
        for s in sorted(self.sources.items(), key=obj_key):
            md = s["metadata"]
            out.append({"catalogSourceRef": {"apiVersion": olm.V1A1, "kind": "CatalogSource",
                                             "name": md["name"], "namespace": md["namespace"],
                                             "uid": md.get("uid")},
                        "healthy": True, "lastUpdated": now})
        return out

    def reconcile_sub(self, key):
        sub = self.subs.get(key)
        if sub is None:
            return
        ns = key.split("/", 1)[0]
        spec = sub.get("spec") or {}
        old = sub.get("status") or {}
        status = copy.deepcopy(old)
        now = now_iso()
        status["catalogHealth"] = self._catalog_health(sub, now)
        source_key = "%s/%s" % (spec.get("sourceNamespace"), spec.get("source"))
        source_ok = self.sources.get(source_key) is not None
        conds = olm.set_condition(status.get("conditions") or [], "CatalogSourcesUnhealthy",
                                  "False" if source_ok else "True",
                                  "AllCatalogSourcesHealthy" if source_ok
                                  else "UnhealthyCatalogSourceFound",
                                  "all available catalogsources are healthy" if source_ok
                                  else "targeted catalogsource %s missing" % source_key, now)
        installed = old.get("installedCSV")
        res = olm.resolve(sub, self.olm_cfg, source_ok, installed)
        if res.error:
            status["conditions"] = olm.set_condition(conds, "ResolutionFailed", "True",
                                                     "ConstraintsNotSatisfiable", res.error, now)
            self._patch_sub_status(sub, status)
            return
        conds = olm.set_condition(conds, "ResolutionFailed", None)
        pkg = self.olm_cfg["packages"][res.package]
        install = (ns, pkg, res.package, res.csv, pkg["channels"][res.channel], installed)
        if installed == res.csv:
            self._ensure_csv_phase(*install[:5])
            status.update({"conditions": olm.set_condition(conds, "InstallPlanPending", None),
                           "currentCSV": res.csv, "installedCSV": res.csv, "state": "AtLatestKnown"})
            self._patch_sub_status(sub, status)
            return
        plan = self._plan_for(sub, key, res.csv, now)
        status.update(_plan_refs(plan, ns, res.csv))
        plan, conds, fields, requeue = self._advance_plan(key, sub, plan, conds, install, now)
        if conds is None:
            return
        status.update(fields, conditions=conds)
        status["installPlanRef"]["resourceVersion"] = plan["metadata"].get("resourceVersion")
        self._patch_sub_status(sub, status)
        if requeue == 0:
            self.queue.add("sub/" + key)  # maybe an upgrade to the channel head is next
        elif requeue is not None:
            self.queue.add_after("sub/" + key, requeue)

    def _plan_for(self, sub, key, target, now):
        """The Subscription's InstallPlan for ``target``: the one it refers to, else a new one
        (Installing when approved, else RequiresApproval)."""
        ns = key.split("/", 1)[0]
        ref = (sub.get("status") or {}).get("installPlanRef") or {}
        if ref.get("name"):
            plan = self.plans.get("%s/%s" % (ns, ref["name"]))
            if plan is not None and target in (plan.get("spec") or {}).get(
                    "clusterServiceVersionNames", []):
                return plan
        approval = (sub.get("spec") or {}).get("installPlanApproval") or "Automatic"
        plan = self.kube.create(K.INSTALLPLANS, olm.make_installplan(sub, target, approval), ns)
        phase = "Installing" if plan["spec"]["approved"] else "RequiresApproval"
        plan = self._set_plan_status(plan, olm.installplan_status(phase, sub, target, now=now))
        if phase == "Installing":
            self.due[plan["metadata"]["uid"]] = time.monotonic() + self.olm_cfg["install_seconds"]
            self.queue.add_after("sub/" + key, self.olm_cfg["install_seconds"])
        self.log.info("%s: InstallPlan %s for %s (%s)", key, plan["metadata"]["name"], target, phase)
        return plan

    def _advance_plan(self, key, sub, plan, conds, install, now):
        """Move the InstallPlan on: approval, install_seconds of Installing, then the CSV.
        Returns (plan, conditions, status fields, requeue: None, 0 = now, or seconds);
        conditions None = a phase left alone (the Subscription is not patched)."""
        target = install[3]
        uid = plan["metadata"]["uid"]
        pphase = (plan.get("status") or {}).get("phase") or ""
        if not bool((plan.get("spec") or {}).get("approved")):
            if pphase != "RequiresApproval":
                plan = self._set_plan_status(plan, olm.installplan_status(
                    "RequiresApproval", sub, target, now=now))
            return plan, olm.set_condition(conds, "InstallPlanPending", "True", "RequiresApproval",
                                           "", now), {}, None
        if pphase in ("", "Planning", "RequiresApproval"):
            plan = self._set_plan_status(plan, olm.installplan_status("Installing", sub, target,
                                                                      now=now))
            self.due[uid] = time.monotonic() + self.olm_cfg["install_seconds"]
            pphase = "Installing"
        if pphase == "Installing":
            left = self.due.setdefault(uid, time.monotonic()) - time.monotonic()
            if left > 0:
                return plan, olm.set_condition(conds, "InstallPlanPending", "True", "Installing",
                                               "", now), {}, left
            self._install_csv(*install)
            plan = self._set_plan_status(plan, olm.installplan_status(
                "Complete", sub, target, step_status="Created", now=now))
            self.due.pop(uid, None)
            pphase = "Complete"
        if pphase == "Complete":
            return (plan, olm.set_condition(conds, "InstallPlanPending", None),
                    {"installedCSV": target, "state": "AtLatestKnown"}, 0)
        if pphase == "Failed":
            return plan, olm.set_condition(conds, "InstallPlanFailed", "True",
                                           "InstallComponentFailed", "", now), {}, None
        return plan, None, {}, None

    def _set_plan_status(self, plan, status):
        return self.patch_status(self.plans, plan, status)

    def _groups_in(self, ns):
        return [g for g in self.groups.items() if g["metadata"]["namespace"] == ns]

    def _install_csv(self, ns, pkg, pkg_name, target, entries, previous):
        groups = self._groups_in(ns)
        og = groups[0] if len(groups) == 1 else None
        csv = self.csv_for(pkg, target, pkg_name, entries, ns, og)
        have = self.csvs.get("%s/%s" % (ns, target))
        if have is None:
            try:
                have = self.kube.create(K.CSVS, csv, ns)
            except K.ApiError as exc:
                if exc.status != 409:
                    raise
                have = self.kube.get(K.CSVS, target, ns)
            self.csvs.update_local(have)
            self.log.info("%s: created CSV %s", ns, target)
        self._ensure_csv_phase(ns, pkg, pkg_name, target, entries)
        # the replaced CSV goes away once the new one is installed
        label = olm.component_label(pkg_name, ns)
        for other in self.csvs.items():
            omd = other["metadata"]
            if omd["namespace"] == ns and omd["name"] != target and label in (omd.get("labels") or {}):
                self.kube.delete(K.CSVS, omd["name"], ns)
                self.log.info("%s: deleted replaced CSV %s", ns, omd["name"])

    def _ensure_csv_phase(self, ns, pkg, pkg_name, target, entries):
        csv = self.csvs.get("%s/%s" % (ns, target))
        if csv is None:
            return
        groups = self._groups_in(ns)
        phase, reason, message, og = olm.csv_phase(csv.get("spec") or {}, groups, ns)
        st = csv.get("status") or {}
        if st.get("phase") == phase and st.get("reason") == reason:
            return
        now = now_iso()
        if og is not None:
            ann = (csv["metadata"].get("annotations") or {})
            if ann.get("olm.operatorGroup") != og["metadata"]["name"]:
                targets = (og.get("spec") or {}).get("targetNamespaces") or []
                csv = self.kube.merge_patch(K.CSVS, target, {"metadata": {"annotations": {
                    "olm.operatorGroup": og["metadata"]["name"], "olm.operatorNamespace": ns,
                    "olm.targetNamespaces": ",".join(targets)}}}, ns)
            self._og_status(og)
        self.patch_status(self.csvs, csv, olm.csv_status(phase, reason, message, now))
        self.log.info("%s: CSV %s %s (%s)", ns, target, phase, reason)

    def _og_status(self, og):
        md = og["metadata"]
        targets = (og.get("spec") or {}).get("targetNamespaces") or []
        want = sorted(targets) if targets else [""]
        if ((og.get("status") or {}).get("namespaces")) == want:
            return
        try:
            self.kube.merge_patch(K.OPERATORGROUPS, md["name"], {"status": {
                "namespaces": want, "lastUpdated": now_iso()}}, md["namespace"],
                subresource="status")
        except K.ApiError as exc:
            self.log.debug("operatorgroup status: %s", exc)



def _plan_refs(plan, ns, target):
    """The Subscription status fields that point at its InstallPlan."""
    pmd = plan["metadata"]
    return {
        "currentCSV": target,
        "installPlanRef": {"apiVersion": olm.V1A1, "kind": "InstallPlan", "name": pmd["name"],
                           "namespace": ns, "resourceVersion": pmd.get("resourceVersion"),
                           "uid": pmd.get("uid")},
        "installplan": {"apiVersion": olm.V1A1, "kind": "InstallPlan", "name": pmd["name"],
                        "uuid": pmd.get("uid")},
        "installPlanGeneration": (plan.get("spec") or {}).get("generation", 1),
        "state": "UpgradePending",
    }
