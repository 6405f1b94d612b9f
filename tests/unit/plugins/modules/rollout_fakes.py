# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A small GPU cluster on the shared fake API for the bad-input tests of gpuops.gpu.mig_rollout and
gpuops.gpu.sharing_rollout (test_mig_rollout.py, test_sharing_rollout.py), and the one check of a refusal:
the module failed, changed nothing, wrote nothing, and its message names what to fix.

The cluster is shaped like the virtual GPU cluster's: a100-0 (MIG-capable, at all-disabled), l40s-0 and t4-0
(not MIG-capable), cpu-0 without GPUs; a ready ClusterPolicy (MIG strategy single, the operator's built-in MIG
configs, device-plugin ConfigMap gpuops-device-plugin-config with the time-slicing profile 'ts')."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import functools

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing_render import render_config
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu_cluster_data import node
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout.fake_api import FakeApi

NS = 'gpu-operator'
CM = 'gpuops-device-plugin-config'
POLICY = 'gpu-cluster-policy'
REFUSED = 'nothing was changed; fix these first: '
COMMON = {'operator_namespace': NS, 'poll_interval': 0.1, 'state_timeout': 5, 'verify_timeout': 5}


def over(base):
    """A maker of module arguments: ``base`` with the keyword arguments it is called with on top."""
    return functools.partial(dict, base)


def assign(key, value, **where):
    """Arguments whose one assignment is ``where`` with ``key`` set to ``value``."""
    return {'assignments': [dict(where, **{key: value})]}


def ts(replicas):
    resource = {'name': 'nvidia.com/gpu', 'replicas': replicas}
    return {'version': 'v1', 'sharing': {'timeSlicing': {'resources': [resource]}}}


def gpu_node(name, product, count, mig_capable, **labels):
    labels.update({'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.product': product, 'nvidia.com/gpu.count': str(count),
                   'nvidia.com/gpu.replicas': '1', 'nvidia.com/gpu.sharing-strategy': 'none',
                   'nvidia.com/mig.capable': str(mig_capable).lower()})
    return node(name, labels=labels, allocatable={'nvidia.com/gpu': str(count)})


def cluster():
    """A FakeApi holding the cluster of this module's docstring."""
    api = FakeApi([
        gpu_node('a100-0', 'NVIDIA-A100-SXM4-40GB', 8, True, **{
            'nvidia.com/mig.strategy': 'single', 'nvidia.com/mig.config': 'all-disabled',
            'nvidia.com/mig.config.state': 'success', 'gpuops.dev/pool': 'training'}),
        gpu_node('l40s-0', 'NVIDIA-L40S', 4, False, **{'gpuops.dev/pool': 'inference'}),
        gpu_node('t4-0', 'Tesla-T4', 1, False, **{'gpuops.dev/pool': 'inference'}),
        node('cpu-0', labels={'gpuops.dev/pool': 'general'})])
    api.policies = [{'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': {'name': POLICY}, 'spec': {
        'mig': {'strategy': 'single'}, 'migManager': {'config': {'name': 'default-mig-parted-config'}},
        'devicePlugin': {'enabled': True, 'config': {'name': CM, 'default': ''}}},
        'status': {'state': 'ready', 'namespace': NS}}]
    api.config_maps[(NS, CM)] = {'metadata': {'name': CM, 'namespace': NS}, 'data': {'ts': render_config(ts(4))}}
    return api


def refusal(run_module, module, args):
    """The message of ``module`` run (not in check mode) with ``args`` over COMMON on cluster(): it must have
    failed without a change, and the fake API must have taken no write."""
    api = cluster()
    code, result = run_module(module, dict(COMMON, **args), core=api, custom=api, policy=api)
    assert code == 1 and result.get('failed') is True and not result.get('changed'), result
    assert api.writes() == [], 'a refused run wrote: %s' % api.writes()
    msg = result['msg']
    assert 'Traceback' not in msg and 'HTTP response headers' not in msg, msg
    return msg


def check_cases(run_module, module, cases, own_words):
    """Every case of ``cases`` (case -> (arguments over COMMON, the option it gets wrong, words of its message))
    is refused (``refusal``) with a message that names the option, holds the words and no other error; one that gpuops.gpu's own
    checks refuse (not Ansible's argument spec: ``own_words`` is the cases whose words are Ansible's) says so
    first. Returns {case: message}."""
    messages, wrong = {}, []
    for case, (args, option, words) in cases.items():
        msg = messages[case] = refusal(run_module, module, args)
        missing = [w for w in [option] + words if w not in msg]
        if missing:
            wrong.append('%s: missing %s in: %s' % (case, missing, msg))
        if case not in own_words and not msg.startswith(REFUSED):
            wrong.append('%s: does not start with %r: %s' % (case, REFUSED, msg))
        if ' | ' in msg:  # gpuops.gpu joins its errors with ' | ': one wrong option, one error
            wrong.append('%s: more than the one error of the case: %s' % (case, msg))
    assert wrong == [], '\n'.join(wrong)
    return messages


def same_messages(messages):
    """Pairs of cases whose refusals read the same (each distinct bad input must get its own message)."""
    by_text = {}
    for case, msg in messages.items():
        by_text.setdefault(msg, []).append(case)
    return [cases for cases in by_text.values() if len(cases) > 1]


def check_bad_inputs(run_module, module, cases, arg_spec_cases):
    """``cases`` (gpuops.gpu's own checks) and ``arg_spec_cases`` (Ansible's argument spec) are each refused as
    ``check_cases`` asks, and no two of gpuops.gpu's own refusals share a message."""
    assert same_messages(check_cases(run_module, module, dict(cases, **arg_spec_cases), set(arg_spec_cases))) == []


def check_good_input(run_module, module, args):
    """The control: the cluster of the cases accepts the arguments they start from (check mode, nothing
    written), so each refusal of ``check_bad_inputs`` comes from the one option its case gets wrong."""
    api = cluster()
    code, result = run_module(module, dict(COMMON, **args), check=True, core=api, custom=api, policy=api)
    assert code == 0 and result['changed'] is True and api.writes() == [], result
