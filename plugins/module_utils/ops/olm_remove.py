# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Cluster side of ``gpuops.gpu.olm_operator`` with ``state: absent``: read the Subscription, its
CSV(s) and the OperatorGroup, then delete Subscription → CSV(s) → OperatorGroup (only when
gpuops.gpu created it), and wait until they are gone. The decisions are in
``plans/uninstall.py`` ``olm_removal`` (pure)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import time

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import is_dns_subdomain
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError, InstallFailed
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import ModuleRun
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.olm import GROUP, V1A1
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.uninstall import olm_removal


def input_errors(params):
    errors = []
    ns = params.get('namespace') or ''
    if not is_dns_subdomain(ns) or len(ns) > 63:
        errors.append("namespace '%s' is not a valid namespace name (lowercase letters, digits and '-')" % ns)
    for key in ('package', 'subscription_name'):
        value = params.get(key)
        if (key == 'package' or value is not None) and not is_dns_subdomain(value or ''):
            errors.append("%s '%s' is not a valid object name" % (key, value))
    return errors


class OlmRemove(ModuleRun):
    """One ``gpuops.gpu.olm_operator`` run with ``state: absent``."""

    def __init__(self, conn, params, check_mode, sleep=time.sleep, clock=time.monotonic):
        super(OlmRemove, self).__init__(conn, params, check_mode, sleep=sleep, clock=clock)
        self.ns = params['namespace']
        self.sub_name = params.get('subscription_name') or params['package']

    def _list(self, version, plural):
        return self.conn.call(self.conn.custom.list_namespaced_custom_object, GROUP, version, self.ns,
                              plural).get('items') or []

    def _get(self, version, plural, name):
        return self.conn.call_or_none(self.conn.custom.get_namespaced_custom_object, GROUP, version, self.ns,
                                      plural, name)

    def _delete(self, version, plural, name):
        self.conn.call_or_none(self.conn.custom.delete_namespaced_custom_object, GROUP, version, self.ns, plural,
                               name)

    def read(self):
        if self.conn.call_or_none(self.conn.core.read_namespace, self.ns) is None:
            return None, {'subscription': None, 'csvs': [], 'operator_group': None, 'notes': []}
        subs = self._list(V1A1, 'subscriptions')
        sub = next((s for s in subs if s['metadata']['name'] == self.sub_name), None)
        if sub is not None and (sub.get('spec') or {}).get('name') not in (None, self.params['package']):
            raise InputError('Subscription %s/%s is for package %s, not %s; set subscription_name or package to '
                             'match; nothing was changed'
                             % (self.ns, self.sub_name, sub['spec']['name'], self.params['package']))
        groups = self._list('v1', 'operatorgroups')
        csvs = [c['metadata']['name'] for c in self._list(V1A1, 'clusterserviceversions')]
        return sub, olm_removal(sub, subs, groups, csvs)

    def run(self):
        started = self.clock()
        errors = input_errors(self.params)
        if errors:
            raise InputError('nothing was changed; fix these first: ' + ' | '.join(errors))
        sub, plan = self.read()
        actions = []
        before = {}
        if plan['subscription']:
            actions.append('delete Subscription %s/%s' % (self.ns, plan['subscription']))
            before['subscription'] = {'name': plan['subscription'], 'spec': sub.get('spec') or {}}
        for csv in plan['csvs']:
            actions.append('delete ClusterServiceVersion %s/%s' % (self.ns, csv))
        if plan['csvs']:
            before['csvs'] = list(plan['csvs'])
        if plan['operator_group']:
            actions.append('delete OperatorGroup %s/%s' % (self.ns, plan['operator_group']))
            before['operator_group'] = {'name': plan['operator_group']}
        if not self.check_mode and actions:
            if plan['subscription']:
                self._delete(V1A1, 'subscriptions', plan['subscription'])
            for csv in plan['csvs']:
                self._delete(V1A1, 'clusterserviceversions', csv)
            if plan['operator_group']:
                self._delete('v1', 'operatorgroups', plan['operator_group'])
            if self.params['wait']:
                self._wait_gone(plan)
        status = (sub or {}).get('status') or {}
        return {
            'changed': bool(actions), 'actions': actions, 'state': 'absent', 'namespace': self.ns,
            'package': self.params['package'], 'subscription': self.sub_name,
            'operator_group': plan['operator_group'], 'channel': (sub or {}).get('spec', {}).get('channel'),
            'csv': status.get('installedCSV'), 'csv_phase': None, 'version': None, 'install_plan': None,
            'approved_install_plans': [], 'held_install_plans': [], 'alm_examples': [], 'related_images': [],
            'removed_csvs': list(plan['csvs']), 'api_requests': self.conn.requests, 'warnings': plan['notes'],
            'diff': {'before': before, 'after': {}}, 'duration_s': round(self.clock() - started, 2),
        }

    def _wait_gone(self, plan):
        """Until every deleted object is gone (finalizers done); InstallFailed at wait_timeout."""
        objects = ([(V1A1, 'subscriptions', plan['subscription'])] if plan['subscription'] else []) + \
            [(V1A1, 'clusterserviceversions', c) for c in plan['csvs']] + \
            ([('v1', 'operatorgroups', plan['operator_group'])] if plan['operator_group'] else [])
        left = {}

        def gone():
            left['objects'] = ['%s/%s' % (plural, name) for version, plural, name in objects
                               if self._get(version, plural, name) is not None]
            return True if not left['objects'] else None

        def timed_out():
            raise InstallFailed('deleted, but still there after %ss (finalizers?): %s'
                                % (self.params['wait_timeout'], ', '.join(left['objects'])),
                                {'changed': True, 'namespace': self.ns, 'package': self.params['package']})
        self.waiter.until(gone, self.params['wait_timeout'], timed_out)


def run(conn, params, check_mode, sleep=time.sleep):
    """Returns the result dict; raises InputError (nothing written) or InstallFailed."""
    return OlmRemove(conn, params, check_mode, sleep=sleep).run()
