# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Cluster side of ``gpuops.gpu.cluster_policy``: read the ClusterPolicies and the CRD schema,
validate, server-side dry-run the change (types, enums and unknown fields are refused by the
apiserver itself before anything is stored), write only what differs, wait for ``ready``.
The merge logic is in ``cluster_policy.py`` (pure)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import time

from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge, replace_patch
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    CLUSTER_POLICY, CLUSTER_POLICY_CRD, managed_by_labels)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import (
    InputError, NotReady, api_message, status_of)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import ModuleRun
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import cluster_policy as cp
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.driver import driver_rule_errors

try:
    from kubernetes.client.rest import ApiException
except ImportError:  # pragma: no cover - AnsibleK8SModule reports missing kubernetes
    ApiException = Exception

FIELD_MANAGER = 'gpuops.gpu'
# After a change, 'ready' counts only once the operator had this long to see it (the ClusterPolicy
# status has no observedGeneration, so a 'ready' read right after the write may be the old one).
SETTLE_SECONDS = 5.0
# a patch touching these is checked against NVIDIA's cross-field driver rules (plans/driver.py)
RULE_FIELDS = ('driver', 'gds', 'gdrcopy')


def list_policies(conn):
    """``(every ClusterPolicy, whether the ClusterPolicy API is served)``: ``([], False)`` before the GPU
    operator's CRD exists."""
    data = conn.call_or_none(conn.custom.list_cluster_custom_object, *CLUSTER_POLICY)
    if data is None:
        return [], False
    return data.get('items') or [], True


def read_cluster_policy(conn, name=None):
    """The ClusterPolicy called ``name``, else the first one (None when there is none or the API is
    not served). InputError when ``name`` is given and not found."""
    if name:
        policy = conn.call_or_none(conn.custom.get_cluster_custom_object, *(CLUSTER_POLICY + (name,)))
        if policy is None:
            raise InputError("ClusterPolicy '%s' not found" % name)
        return policy
    policies, _served = list_policies(conn)
    return policies[0] if policies else None


def delete_policy(conn, name):
    """Delete the ClusterPolicy ``name`` (the operator removes its operands); False when it was not there."""
    return conn.call_or_none(conn.custom.delete_cluster_custom_object, *(CLUSTER_POLICY + (name,))) is not None


def restore_policy(conn, saved, dry_run=False):
    """Create the ClusterPolicy ``saved`` as it is (name, labels, annotations, spec); with ``dry_run`` only the
    server-side dry run (the CRD's schema and rules), which the caller does before any write of its own."""
    conn.call(conn.custom.create_cluster_custom_object, *(CLUSTER_POLICY + (saved,)), field_manager=FIELD_MANAGER,
              field_validation='Strict', **({'dry_run': 'All'} if dry_run else {}))


def info(conn, params, check_mode=False):
    """``gpuops.gpu.cluster_policy_info``: one list call, then :func:`cp.select_policy` decides which
    ClusterPolicy the caller works on and what stops it, and :func:`cp.policy_settings` what the operator
    takes from it. Reads only (check mode changes nothing)."""
    policies, served = list_policies(conn)
    policy, matching, errors = cp.select_policy(policies, params.get('name') or '', params.get('required', True),
                                                params.get('name_option') or 'name')
    status = (policy or {}).get('status') or {}
    result = {'changed': False, 'api_found': served, 'cluster_policy': policy, 'cluster_policies': matching,
              'name': name_of(policy) or '',
              'namespace': status.get('namespace') or '', 'state': cp.policy_state(policy),
              'errors': errors, 'api_requests': conn.requests}
    result.update(cp.policy_settings((policy or {}).get('spec')))
    return result


class PolicyApply(ModuleRun):
    def __init__(self, conn, params, check_mode, sleep=time.sleep, clock=time.monotonic):
        super(PolicyApply, self).__init__(conn, params, check_mode, sleep=sleep, clock=clock)
        self.warnings = []

    # --- reads -----------------------------------------------------------------------------

    def _get(self, name):
        return self.conn.call_or_none(self.conn.custom.get_cluster_custom_object, *(CLUSTER_POLICY + (name,)))

    def _schema(self):
        try:
            crd = self.conn.call(self.conn.custom.get_cluster_custom_object, 'apiextensions.k8s.io', 'v1',
                                 'customresourcedefinitions', CLUSTER_POLICY_CRD)
        except ApiException as exc:
            if status_of(exc) in (401, 403, 404):
                return None
            raise
        return cp.spec_schema(crd)

    # --- writes (dry run first) ------------------------------------------------------------

    def _write(self, method, args, dry_run):
        kwargs = {'field_manager': FIELD_MANAGER, 'field_validation': 'Strict'}
        if dry_run:
            kwargs['dry_run'] = 'All'
        return self.conn.call(method, *(CLUSTER_POLICY + args), **kwargs)

    def _create(self, body, dry_run):
        return self._write(self.conn.custom.create_cluster_custom_object, (body,), dry_run)

    def _patch(self, name, patch, dry_run):
        return self._write(self.conn.custom.patch_cluster_custom_object, (name, {'spec': patch}), dry_run)

    # --- run -------------------------------------------------------------------------------

    def run(self):
        started = self.clock()
        params = self.params
        overrides = params.get('overrides') or {}
        errors = cp.input_errors(overrides, params.get('tolerations'))
        if errors:
            raise InputError('nothing was changed; fix these first: ' + ' | '.join(errors))
        try:
            base_name, base_spec = cp.base_policy(params.get('alm_examples'), params.get('base'))
        except ValueError as exc:
            raise InputError('%s; nothing was changed' % exc)
        policies, crd_present = list_policies(self.conn)
        name = params.get('name') or (policies[0]['metadata']['name'] if len(policies) == 1 else None) \
            or base_name or cp.DEFAULT_NAME
        if params['state'] == 'absent':
            return self._absent(name, policies, started)
        if not crd_present and not self.check_mode:
            raise InputError('the ClusterPolicy API (nvidia.com/v1) is not served: install the GPU operator first '
                             '(gpuops.gpu.olm_operator or its Helm chart); nothing was changed')
        existing = self._existing(name, policies)
        schema = self._schema() if crd_present else None
        self._validate(schema, base_spec, existing)

        before = copy.deepcopy((existing or {}).get('spec')) if existing else None
        try:
            if existing is None:
                result = self._plan_create(name, base_spec, crd_present)
            else:
                result = self._plan_patch(existing)
        except ValueError as exc:
            raise InputError('%s; nothing was changed' % exc)
        result.update({'name': name, 'api_requests': self.conn.requests, 'warnings': self.warnings})
        result['diff'] = {'before': {'spec': before} if before is not None else {},
                          'after': {'spec': result['spec']} if result['changed'] else ({'spec': before} if before else {})}
        if params['wait'] and not self.check_mode:
            policy = self._wait_ready(name, result)
            result['state'] = cp.policy_state(policy)
        else:
            result['state'] = cp.policy_state(existing) if existing else ''
        result['api_requests'] = self.conn.requests
        result['duration_s'] = round(self.clock() - started, 2)
        return result

    def _existing(self, name, policies):
        """The ClusterPolicy ``name`` as listed (None: to be created), or InputError. ``state=patched`` changes
        the one the caller picked (cluster_policy_info picks it among several) and never creates one;
        ``present`` works only where no other ClusterPolicy exists (the operator would ignore one of them)."""
        existing = next((p for p in policies if p['metadata']['name'] == name), None)
        if self.params['state'] == 'patched':
            if existing is None:
                raise InputError("ClusterPolicy %s not found (state patched changes an existing ClusterPolicy "
                                 "only); nothing was changed" % name)
            return existing
        other = cp.other_policy_error(policies, name)
        if other:
            raise InputError(other + '; nothing was changed')
        return existing

    def _validate(self, schema, base_spec, existing):
        overrides = self.params.get('overrides') or {}
        if schema:
            errors = cp.input_errors(overrides, self.params.get('tolerations'), schema)
            if errors:
                raise InputError('nothing was changed; fix these first (checked against the ClusterPolicy CRD of '
                                 'this cluster): ' + ' | '.join(errors))
            base_errors = cp.schema_errors(base_spec, schema, 'base')
            if base_errors and (existing is None or self.params['replace']):
                self.warnings.append('the base ClusterPolicy has fields this cluster\'s CRD does not know (the '
                                     'apiserver will refuse them; use a base that matches the operator version): '
                                     + ' | '.join(base_errors))
        if existing is not None and cp.gpu_toleration_missing(existing.get('spec') or {}) \
                and not cp.user_tolerations(overrides, self.params.get('tolerations')):
            self.warnings.append('ClusterPolicy %s has daemonsets.tolerations without nvidia.com/gpu: the operands do '
                                 'not schedule on GPU nodes tainted nvidia.com/gpu; it is added back'
                                 % existing['metadata']['name'])

    def _plan_create(self, name, base_spec, crd_present):
        spec = cp.desired_spec(base_spec, self.params.get('overrides'), self.params.get('tolerations'))
        self._check_rules(spec)
        body = {'apiVersion': cp.API_VERSION, 'kind': cp.KIND,
                'metadata': {'name': name, 'labels': managed_by_labels()},
                'spec': spec}
        if crd_present:
            try:
                dry = self._create(body, dry_run=True)
            except ApiException as exc:
                raise InputError('the apiserver refuses this ClusterPolicy (server-side dry run): %s; nothing was '
                                 'changed' % api_message(exc))
            spec = dry.get('spec') or spec
            if not self.check_mode:
                self._create(body, dry_run=False)
        else:
            self.warnings.append('the ClusterPolicy API is not served yet (the operator is not installed); '
                                 'this is the ClusterPolicy that would be created')
        return {'changed': True, 'created': True, 'patch': spec, 'spec': spec}

    def _plan_patch(self, existing):
        current = existing.get('spec') or {}
        name = existing['metadata']['name']
        if self.params['replace']:
            _base_name, base_spec = cp.base_policy(self.params.get('alm_examples'), self.params.get('base'))
            wanted = cp.desired_spec(base_spec, self.params.get('overrides'), self.params.get('tolerations'))
            patch = replace_patch(current, wanted)
        else:
            patch = cp.patch_for_existing(current, self.params.get('overrides'), self.params.get('tolerations'))
        if not patch:
            return {'changed': False, 'created': False, 'patch': {}, 'spec': current}
        if any(key in patch for key in RULE_FIELDS):
            self._check_rules(deep_merge(current, patch))
        try:
            dry = self._patch(name, patch, dry_run=True)
        except ApiException as exc:
            raise InputError('the apiserver refuses this change to ClusterPolicy %s (server-side dry run): %s; '
                             'nothing was changed' % (name, api_message(exc)))
        after = dry.get('spec') or deep_merge(current, patch)
        if after == current:
            return {'changed': False, 'created': False, 'patch': {}, 'spec': current}
        if not self.check_mode:
            stored = self._patch(name, patch, dry_run=False)
            after = stored.get('spec') or after
        return {'changed': True, 'created': False, 'patch': patch, 'spec': after}

    def _check_rules(self, spec):
        errors = driver_rule_errors(spec)
        if errors:
            raise InputError('nothing was changed; the GPU operator would refuse this ClusterPolicy: '
                             + ' | '.join(errors))

    def _absent(self, name, policies, started):
        existing = next((p for p in policies if p['metadata']['name'] == name), None)
        result = {'name': name, 'changed': existing is not None, 'created': False, 'patch': {},
                  'spec': {}, 'state': '', 'warnings': self.warnings,
                  'diff': {'before': {'spec': (existing or {}).get('spec')} if existing else {}, 'after': {}}}
        if existing is not None and not self.check_mode:
            delete_policy(self.conn, name)
        result['api_requests'] = self.conn.requests
        result['duration_s'] = round(self.clock() - started, 2)
        return result

    def _wait_ready(self, name, result):
        """The ClusterPolicy once ``ready`` (and, after a change, SETTLE_SECONDS old); NotReady when
        the operator ignores it or at wait_timeout."""
        start = self.clock()
        settle = SETTLE_SECONDS if result['changed'] else 0.0
        last = {'policy': None}

        def ready():
            policy = last['policy'] = self._get(name) or last['policy']
            state = cp.policy_state(policy)
            if state == 'ready' and self.clock() - start >= settle:
                return policy
            if state == 'ignored':
                raise NotReady('ClusterPolicy %s is ignored by the GPU operator (it reconciles another '
                               'ClusterPolicy); keep a single ClusterPolicy' % name, self._partial(result, policy))
            return None
        return self.waiter.until(ready, self.params['wait_timeout'],
                                 lambda: self._not_ready(name, result, last['policy']))

    def _not_ready(self, name, result, policy):
        reason = cp.not_ready_reason(policy)
        namespace = ((policy or {}).get('status') or {}).get('namespace')
        raise NotReady('ClusterPolicy %s is not ready after %ss (state %s%s); check the operator and its '
                       'operand pods in the operator namespace%s'
                       % (name, self.params['wait_timeout'], cp.policy_state(policy) or 'not set yet',
                          ', %s' % reason if reason else '', ' %s' % namespace if namespace else ''),
                       self._partial(result, policy))

    def _partial(self, result, policy):
        out = dict(result)
        out['state'] = cp.policy_state(policy)
        out['api_requests'] = self.conn.requests
        return out


def run(conn, params, check_mode, sleep=time.sleep):
    """Returns the result dict; raises InputError (nothing written) or NotReady."""
    return PolicyApply(conn, params, check_mode, sleep=sleep).run()


__all__ = ['run', 'info', 'list_policies', 'read_cluster_policy', 'InputError', 'NotReady', 'PolicyApply']
