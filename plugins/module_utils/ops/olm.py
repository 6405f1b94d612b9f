# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Cluster side of an OLM operator install: read and check everything first, then Namespace →
OperatorGroup → Subscription → approve ONLY the pinned CSV's InstallPlan → wait for the CSV to be
Succeeded. The decisions are in ``olm.py`` (pure)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import time

from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import olm
from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import suggest
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import managed_by_labels
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError, InstallFailed, status_of
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import ModuleRun

try:
    from kubernetes.client.rest import ApiException
except ImportError:  # pragma: no cover - AnsibleK8SModule reports missing kubernetes
    ApiException = Exception

GROUP = 'operators.coreos.com'
V1A1 = 'v1alpha1'
PKG_GROUP, PKG_VERSION = 'packages.operators.coreos.com', 'v1'


class OlmInstall(ModuleRun):
    """One ``gpuops.gpu.olm_operator`` run."""

    def __init__(self, conn, params, check_mode, sleep=time.sleep, clock=time.monotonic):
        super(OlmInstall, self).__init__(conn, params, check_mode, sleep=sleep, clock=clock)
        self.ns = params['namespace']
        self.sub_name = params.get('subscription_name') or params['package']
        self.actions = []
        self.warnings = []
        self.created = []       # (kind, name) written by this run, for a rollback
        self.before = {}
        self.after = {}

    # --- small API helpers ----------------------------------------------------------------

    def _get(self, version, plural, name, namespace=None, group=GROUP):
        custom = self.conn.custom
        if namespace:
            return self.conn.call_or_none(custom.get_namespaced_custom_object, group, version, namespace, plural, name)
        return self.conn.call_or_none(custom.get_cluster_custom_object, group, version, plural, name)

    def _list(self, version, plural, namespace, group=GROUP, label_selector=None):
        kwargs = {'label_selector': label_selector} if label_selector else {}
        return self.conn.call(self.conn.custom.list_namespaced_custom_object, group, version, namespace, plural,
                              **kwargs).get('items') or []

    def _create(self, version, plural, body, namespace):
        return self.conn.call(self.conn.custom.create_namespaced_custom_object, GROUP, version, namespace, plural, body)

    def _patch(self, version, plural, name, body, namespace):
        return self.conn.call(self.conn.custom.patch_namespaced_custom_object, GROUP, version, namespace, plural, name,
                              body)

    # --- preflight (reads only) -------------------------------------------------------------

    def preflight(self):
        """Everything that can be checked without writing. Raises InputError."""
        errors = olm.input_errors(self.params)
        if errors:
            raise InputError('nothing was changed; fix these first: ' + ' | '.join(errors))
        self.namespace = self.conn.call_or_none(self.conn.core.read_namespace, self.ns)
        if self.namespace is None and not self.params['create_namespace']:
            raise InputError("namespace %s does not exist and create_namespace is false; nothing was changed"
                             % self.ns)
        self.catalog = self._wait_catalog()
        self.manifest_api, self.channel, self.channel_info = self._check_package()
        self.groups = self._list('v1', 'operatorgroups', self.ns) if self.namespace else []
        subs = self._list(V1A1, 'subscriptions', self.ns) if self.namespace else []
        conflicts = olm.subscription_conflicts(subs, self.sub_name, self.params['package'])
        if conflicts:
            raise InputError('namespace %s already has Subscription(s) %s for package %s; OLM allows one per '
                             'package and namespace: set subscription_name to %s, or delete the other; nothing '
                             'was changed' % (self.ns, ', '.join(conflicts), self.params['package'], conflicts[0]))
        self.subscription = next((s for s in subs if s['metadata']['name'] == self.sub_name), None)
        self._check_operator_group()

    def _wait_catalog(self):
        """The CatalogSource once READY (checked once in check mode); InputError when it is missing
        or not READY at catalog_timeout."""
        name, ns = self.params['source'], self.params['source_namespace']
        last = {}

        def ready():
            catalog = last['catalog'] = self._get(V1A1, 'catalogsources', name, ns)
            if catalog is None:
                others = sorted(c['metadata']['name'] for c in self._list(V1A1, 'catalogsources', ns))
                raise InputError('CatalogSource %s not found in namespace %s (there: %s); check source and '
                                 'source_namespace, or create the CatalogSource first (air-gapped clusters: the '
                                 'mirrored one); nothing was changed'
                                 % (name, ns, ', '.join(others) or 'none'))
            return catalog if olm.catalog_ready(catalog) else None

        def not_ready():
            raise InputError('CatalogSource %s/%s is not READY (connectionState.lastObservedState: %s) after '
                             '%ss; OLM cannot resolve packages from it. Check its catalog pod and image '
                             '(pull secret, mirror); nothing was changed'
                             % (ns, name, olm.catalog_state(last['catalog']) or 'none yet',
                                self.params['catalog_timeout']))
        return self.waiter.until(ready, 0 if self.check_mode else self.params['catalog_timeout'], not_ready)

    def _check_package(self):
        """(PackageManifest API served, channel, channel dict) - the package checked when possible."""
        source, ns, package = self.params['source'], self.params['source_namespace'], self.params['package']
        try:
            manifests = self._list(PKG_VERSION, 'packagemanifests', ns, group=PKG_GROUP,
                                   label_selector='catalog=%s' % source)
        except ApiException as exc:
            if status_of(exc) not in (403, 404):
                raise
            who = ' to this user' if status_of(exc) == 403 else ''
            channel = self.params.get('channel') or '(default)'
            self.warnings.append('the PackageManifest API (packages.operators.coreos.com) is not served%s, so '
                                 'package %s and channel %s are checked by OLM after the Subscription is '
                                 'created (and a Subscription this run created is removed again when OLM '
                                 'cannot resolve it)' % (who, package, channel))
            return False, self.params.get('channel'), None
        manifest = next((m for m in manifests if m['metadata']['name'] == package), None)
        if manifest is None:
            names = sorted(m['metadata']['name'] for m in manifests)
            hint = suggest(package, names)
            raise InputError("catalog %s/%s has no package '%s'%s; nothing was changed" % (
                ns, source, package, "; did you mean '%s'?" % hint if hint else ''))
        try:
            channel, info = olm.package_channel(manifest, self.params.get('channel'), self.params.get('starting_csv'))
        except olm.OlmError as exc:
            raise InputError('%s; nothing was changed' % exc)
        return True, channel, info

    def _check_operator_group(self):
        targets = self.params.get('target_namespaces')
        self.targets = [self.ns] if targets is None else list(targets)
        if len(self.groups) > 1:
            raise InputError('namespace %s has %d OperatorGroups (%s); OLM needs exactly one (CSV phase Failed, '
                             'reason TooManyOperatorGroups): delete the extra ones; nothing was changed'
                             % (self.ns, len(self.groups), ', '.join(g['metadata']['name'] for g in self.groups)))
        self.group = self.groups[0] if self.groups else None
        self.og_name = self.group['metadata']['name'] if self.group else (self.params.get('operator_group_name') or self.ns)
        mode = olm.install_mode(self.targets, self.ns)
        error = olm.install_mode_error(mode, olm.channel_install_modes(self.channel_info),
                                       (self.channel_info or {}).get('currentCSV') or self.params['package'])
        if error:
            raise InputError('%s; nothing was changed' % error)

    # --- writes ----------------------------------------------------------------------------

    def ensure_namespace(self):
        labels = dict(self.params.get('namespace_labels') or {})
        if self.namespace is None:
            labels = managed_by_labels(labels)  # created by gpuops.gpu: the uninstall role may delete it again
            self.before['namespace'] = None
            self.after['namespace'] = {'name': self.ns, 'labels': labels}
            self.actions.append('create Namespace %s' % self.ns)
            if not self.check_mode:
                self.conn.call(self.conn.core.create_namespace, {'apiVersion': 'v1', 'kind': 'Namespace',
                                                                 'metadata': {'name': self.ns, 'labels': labels}})
                self.created.append(('Namespace', self.ns))
            return
        have = labels_of(self.namespace)
        patch = dict((k, v) for k, v in labels.items() if have.get(k) != v)
        if patch:
            self.before['namespace'] = {'name': self.ns, 'labels': dict((k, have.get(k)) for k in patch)}
            self.after['namespace'] = {'name': self.ns, 'labels': patch}
            self.actions.append('label Namespace %s %s' % (self.ns, ', '.join('%s=%s' % kv for kv in sorted(patch.items()))))
            if not self.check_mode:
                self.conn.call(self.conn.core.patch_namespace, self.ns, {'metadata': {'labels': patch}})

    def ensure_operator_group(self):
        if self.group is None:
            body = olm.desired_operator_group(self.og_name, self.ns, self.targets)
            body['metadata']['labels'] = managed_by_labels()
            self.before['operator_group'] = None
            self.after['operator_group'] = {'name': self.og_name, 'spec': body['spec']}
            mode = olm.install_mode(self.targets, self.ns)
            self.actions.append('create OperatorGroup %s/%s (%s)' % (self.ns, self.og_name, mode))
            if not self.check_mode:
                self._create('v1', 'operatorgroups', body, self.ns)
                self.created.append(('OperatorGroup', self.og_name))
            return
        have = olm.operator_group_targets(self.group)
        if sorted(have) != sorted(self.targets):
            spec = {'targetNamespaces': list(self.targets) or None}
            self.before['operator_group'] = {'name': self.og_name, 'spec': self.group.get('spec') or {}}
            self.after['operator_group'] = {'name': self.og_name, 'spec': {'targetNamespaces': list(self.targets)}}
            self.actions.append('set OperatorGroup %s/%s targetNamespaces to %s'
                                % (self.ns, self.og_name, self.targets or '[] (AllNamespaces)'))
            if not self.check_mode:
                self._patch('v1', 'operatorgroups', self.og_name, {'spec': spec}, self.ns)

    def ensure_subscription(self):
        desired = olm.desired_subscription_spec(self.params)
        if self.subscription is None:
            body = {'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'Subscription',
                    'metadata': {'name': self.sub_name, 'namespace': self.ns, 'labels': managed_by_labels()},
                    'spec': desired}
            self.before['subscription'] = None
            self.after['subscription'] = {'name': self.sub_name, 'spec': desired}
            self.actions.append('create Subscription %s/%s (package %s, channel %s, %s approval%s)' % (
                self.ns, self.sub_name, desired['name'], desired.get('channel') or '(default)',
                desired['installPlanApproval'],
                ', startingCSV %s' % desired['startingCSV'] if desired.get('startingCSV') else ''))
            if not self.check_mode:
                self.subscription = self._create(V1A1, 'subscriptions', body, self.ns)
                self.created.append(('Subscription', self.sub_name))
            return
        current = self.subscription.get('spec') or {}
        patch = olm.spec_patch(current, desired)
        if patch:
            self.before['subscription'] = {'name': self.sub_name,
                                           'spec': dict((k, current.get(k)) for k in patch)}
            self.after['subscription'] = {'name': self.sub_name, 'spec': patch}
            self.actions.append('update Subscription %s/%s: %s' % (self.ns, self.sub_name, ', '.join(sorted(patch))))
            if not self.check_mode:
                self.subscription = self._patch(V1A1, 'subscriptions', self.sub_name, {'spec': patch}, self.ns)

    def rollback(self):
        """Delete what this run created (newest first) after OLM refused the Subscription."""
        undone = []
        delete = self.conn.custom.delete_namespaced_custom_object
        for kind, name in reversed(self.created):
            try:
                if kind == 'Namespace':
                    self.conn.call(self.conn.core.delete_namespace, name)
                elif kind == 'OperatorGroup':
                    self.conn.call(delete, GROUP, 'v1', self.ns, 'operatorgroups', name)
                else:
                    self.conn.call(delete, GROUP, V1A1, self.ns, 'subscriptions', name)
                undone.append('%s %s' % (kind, name))
            except ApiException as exc:
                if status_of(exc) != 404:
                    self.warnings.append('could not remove %s %s again: %s' % (kind, name, exc.reason))
        self.created = []
        return undone

    # --- wait ------------------------------------------------------------------------------

    def wait_installed(self):
        """Approve the pinned plan(s), wait for the CSV. Returns (subscription, csv, plans)."""
        seen = {'sub': self.subscription, 'csv': None, 'plans': [], 'approved': set()}

        def timed_out():
            raise self._failed('timed out after %ss waiting for the CSV of package %s to be Succeeded: %s'
                               % (self.params['wait_timeout'], self.params['package'],
                                  olm.describe_wait(seen['sub'], seen['plans'], seen['csv'])),
                               seen['sub'], seen['plans'], seen['csv'])
        return self.waiter.until(lambda: self._install_step(seen), self.params['wait_timeout'], timed_out)

    def _install_step(self, seen):
        """One poll of wait_installed: (sub, csv, plans) once installed, else None; InstallFailed
        when OLM or the CSV failed."""
        sub = seen['sub'] = self._get(V1A1, 'subscriptions', self.sub_name, self.ns) or seen['sub']
        failure = olm.resolution_error(sub) or olm.install_plan_failed(sub)
        if failure:
            raise self._failed('OLM could not install package %s: %s' % (self.params['package'], failure),
                               sub, seen['plans'], seen['csv'], rollback=bool(olm.resolution_error(sub)))
        plans = seen['plans'] = olm.subscription_plans(self._list(V1A1, 'installplans', self.ns), sub)
        pinned = olm.pinned_csv(self.params, sub)
        self._approve(plans, pinned, seen['approved'])
        installed = (sub.get('status') or {}).get('installedCSV')
        csv = seen['csv'] = self._get(V1A1, 'clusterserviceversions', installed, self.ns) if installed else None
        outcome = olm.csv_outcome(csv) if csv is not None else 'waiting'
        if outcome == 'failed':
            phase, reason, message = olm.csv_phase(csv)
            raise self._failed('CSV %s is %s (%s): %s' % (installed, phase, reason, message), sub, plans, csv)
        if outcome == 'succeeded' and self._done(sub, pinned, plans, seen['approved']):
            self.approved = sorted(seen['approved'])
            return sub, csv, plans
        return None

    def _approve(self, plans, pinned, approved):
        """Approve (once each) the InstallPlans that install the pinned CSV (Manual approval)."""
        self.held = []
        if self.params['approval'] != 'Manual':
            return
        approve, self.held = olm.plans_to_approve(plans, pinned)
        for plan in approve:
            if plan['name'] in approved:
                continue
            approved.add(plan['name'])
            self.actions.append('approve InstallPlan %s (%s)' % (plan['name'], ', '.join(plan['csvs'])))
            other = [c for c in plan['csvs'] if c != pinned]
            if other:
                self.warnings.append('InstallPlan %s also installs %s' % (plan['name'], ', '.join(other)))
            self._patch(V1A1, 'installplans', plan['name'], {'spec': {'approved': True}}, self.ns)

    def _done(self, sub, pinned, plans, approved):
        status = sub.get('status') or {}
        installed = status.get('installedCSV')
        if self.params['approval'] == 'Automatic':
            return status.get('currentCSV') in (None, installed)
        if installed == pinned or not pinned:
            return True
        # installed differs from the pin: keep waiting while a plan for the pin is on its way
        pending = [p for p in plans if pinned in olm.plan_csvs(p) and olm.plan_phase(p) not in ('Complete', 'Failed')]
        if pending:
            return False
        self.warnings.append('installed CSV %s is not the pinned %s, and no InstallPlan for %s is pending; '
                             'OLM only installs startingCSV on the first install and then follows the channel '
                             '(held InstallPlans: %s)' % (installed, pinned, pinned,
                                                          ', '.join('%s for %s' % (h['name'], ', '.join(h['csvs']))
                                                                    for h in self.held) or 'none'))
        return True

    def _failed(self, msg, sub, plans, csv, rollback=False):
        result = self._result(sub, csv, plans)
        if rollback and self.created:
            undone = self.rollback()
            result['rolled_back'] = undone
            msg += '; removed again what this run created: %s' % ', '.join(undone)
        elif rollback:
            msg += '; the Subscription existed before this run and was left as it is'
        return InstallFailed(msg, result)

    # --- result ----------------------------------------------------------------------------

    def _result(self, sub, csv, plans):
        installed = ((sub or {}).get('status') or {}).get('installedCSV')
        result = {
            'changed': bool(self.actions), 'actions': list(self.actions), 'namespace': self.ns,
            'package': self.params['package'], 'subscription': self.sub_name,
            'operator_group': getattr(self, 'og_name', None),
            'channel': (sub or {}).get('spec', {}).get('channel') or getattr(self, 'channel', None),
            'csv': installed, 'csv_phase': olm.csv_phase(csv)[0] if csv is not None else None,
            'version': ((csv or {}).get('spec') or {}).get('version'),
            'install_plan': olm.plan_for_csv(plans, installed) if installed else None,
            'approved_install_plans': list(getattr(self, 'approved', [])),
            'held_install_plans': list(getattr(self, 'held', [])),
            'alm_examples': [], 'related_images': [], 'api_requests': self.conn.requests, 'warnings': self.warnings,
            'diff': {'before': copy.deepcopy(self.before), 'after': copy.deepcopy(self.after)},
        }
        if csv is not None:
            try:
                result['alm_examples'] = olm.csv_alm_examples(csv)
            except olm.OlmError as exc:
                self.warnings.append(str(exc))
            result['related_images'] = olm.csv_related_images(csv)
        return result

    def run(self):
        started = self.clock()
        self.preflight()
        self.ensure_namespace()
        self.ensure_operator_group()
        self.ensure_subscription()
        if self.check_mode:
            result = self._check_mode_result()
        elif not self.params['wait']:
            result = self._result(self.subscription, None, [])
        else:
            sub, csv, plans = self.wait_installed()
            result = self._result(sub, csv, plans)
        result['changed'] = bool(self.actions)
        result['actions'] = list(self.actions)
        result['duration_s'] = round(self.clock() - started, 2)
        return result

    def _check_mode_result(self):
        """What an install would give, from what is already there (no waits, no writes)."""
        sub = self.subscription
        status = (sub or {}).get('status') or {}
        installed = status.get('installedCSV')
        csv = self._get(V1A1, 'clusterserviceversions', installed, self.ns) if installed else None
        plans = olm.subscription_plans(self._list(V1A1, 'installplans', self.ns), sub) if sub else []
        pinned = olm.pinned_csv(self.params, sub)
        self.held = []
        if self.params['approval'] == 'Manual' and sub is not None:
            approve, self.held = olm.plans_to_approve(plans, pinned)
            for plan in approve:
                self.actions.append('approve InstallPlan %s (%s)' % (plan['name'], ', '.join(plan['csvs'])))
        result = self._result(sub, csv, plans)
        if installed is None:
            head = (self.channel_info or {}).get('currentCSV')
            result['csv'] = pinned or head
            if head and result['csv'] == head:
                try:
                    result['alm_examples'] = olm.channel_alm_examples(self.channel_info)
                except olm.OlmError as exc:
                    self.warnings.append(str(exc))
        return result


def run(conn, params, check_mode, sleep=time.sleep):
    """Returns the result dict; raises InputError (nothing written) or InstallFailed."""
    return OlmInstall(conn, params, check_mode, sleep=sleep).run()


__all__ = ['run', 'InputError', 'InstallFailed', 'OlmInstall']
