# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The MIG demand of DRA ResourceClaims, with claims made from the templates and classes the dra role writes."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import mig_demand_claims as mdc
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_demand import pending_demand
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.dra_resources import resources_plan


def chart_class(kind):
    """A DeviceClass of NVIDIA's chart (docs/facts.md, "DeviceClasses of the chart")."""
    cel = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '%s'" % kind
    return {'metadata': {'name': '%s.nvidia.com' % kind}, 'spec': {'selectors': [{'cel': {'expression': cel}}]}}


CHART = [chart_class('gpu'), chart_class('mig')]
NIC = {'metadata': {'name': 'nic.example.com'},
       'spec': {'selectors': [{'cel': {'expression': "device.driver == 'nic.example.com'"}}]}}


def written(classes=(), templates=()):
    """The DeviceClasses and ResourceClaimTemplates the dra role writes for these entries."""
    plan = resources_plan({'device_classes': list(classes), 'claim_templates': list(templates), 'quotas': [],
                           'feature_gates': []}, ['team-a'], {}, {'device_classes': CHART})
    assert plan['errors'] == []
    return plan['device_classes'], plan['claim_templates']


def claim_from(template, name='job-0-gpu', pod='job-0', allocated=False):
    """A claim as the resource claim controller makes it from a template for a pod."""
    claim = {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
             'metadata': {'name': name, 'namespace': template['metadata']['namespace'],
                          'ownerReferences': [{'apiVersion': 'v1', 'kind': 'Pod', 'name': pod}]},
             'spec': copy.deepcopy(template['spec']['spec']), 'status': {}}
    if allocated:
        claim['status'] = {'allocation': {'devices': {'results': [
            {'request': 'gpu', 'driver': 'gpu.nvidia.com', 'pool': 'node-a', 'device': 'gpu-0-mig-1g5gb-19-0'}]}},
            'reservedFor': [{'resource': 'pods', 'name': pod}]}
    return claim


def pending_pod(name='job-0', namespace='team-a', claim=None, node=None):
    spec = {'containers': [{'name': 'c'}]}
    if claim:
        spec['resourceClaims'] = [{'name': 'gpu', 'resourceClaimName': claim}]
    if node:
        spec['nodeName'] = node
    return {'metadata': {'name': name, 'namespace': namespace}, 'spec': spec, 'status': {'phase': 'Pending'}}


def mig_template(profile='1g.5gb', count=1, device_class='mig.nvidia.com'):
    _classes, templates = written(templates=[{'name': 'small', 'namespace': 'team-a', 'device_class': device_class,
                                              'mig_profile': profile, 'count': count}])
    return templates[0]


def test_a_claim_from_a_template_with_mig_profile_asks_for_that_mig_resource_times_count():
    for count in (1, 3):
        claim = claim_from(mig_template(count=count))
        result = mdc.claim_demand([claim], CHART, [pending_pod()])
        assert result == {'demand': {'nvidia.com/mig-1g.5gb': count}, 'claims': ['team-a/job-0-gpu'], 'unread': []}


def test_the_pod_that_waits_for_a_claim_by_name_or_by_status_counts_it():
    claim = claim_from(mig_template())
    claim['metadata'].pop('ownerReferences')
    by_spec = pending_pod(claim='job-0-gpu')
    by_status = pending_pod()
    by_status['status']['resourceClaimStatuses'] = [{'name': 'gpu', 'resourceClaimName': 'job-0-gpu'}]
    for pod in (by_spec, by_status):
        assert mdc.claim_demand([claim], CHART, [pod])['demand'] == {'nvidia.com/mig-1g.5gb': 1}
    # no Pending pod uses it (its pod runs, or is in another namespace): no demand
    assert mdc.claim_demand([claim], CHART, [pending_pod(claim='job-0-gpu', node='node-a')])['claims'] == []
    assert mdc.claim_demand([claim], CHART, [pending_pod(namespace='team-b', claim='job-0-gpu')])['claims'] == []


def test_allocated_claims_are_not_pending_demand():
    claim = claim_from(mig_template(), allocated=True)
    assert mdc.claim_demand([claim], CHART, [pending_pod()]) == {'demand': {}, 'claims': [], 'unread': []}


def test_a_class_of_the_dra_role_with_mig_profile_and_the_older_flat_request():
    classes, _templates = written(classes=[{'name': 'mig-3g', 'mig_profile': '3g.20gb'}])
    claim = claim_from(mig_template(device_class='mig.nvidia.com'))
    claim['spec']['devices']['requests'] = [{'name': 'gpu', 'deviceClassName': 'mig-3g', 'count': 2}]
    result = mdc.claim_demand([claim], CHART + classes, [pending_pod()])
    assert result['demand'] == {'nvidia.com/mig-3g.20gb': 2}


def test_a_claim_with_two_requests_a_whole_gpu_and_a_mig_device_and_a_request_of_another_driver():
    claim = claim_from(mig_template(profile='2g.10gb'))
    requests = claim['spec']['devices']['requests']
    requests.append({'name': 'whole', 'exactly': {'deviceClassName': 'gpu.nvidia.com', 'count': 2}})
    requests.append({'name': 'nic', 'exactly': {'deviceClassName': 'nic.example.com'}})
    result = mdc.claim_demand([claim], CHART + [NIC], [pending_pod()])
    assert result == {'demand': {'nvidia.com/gpu': 2, 'nvidia.com/mig-2g.10gb': 1}, 'claims': ['team-a/job-0-gpu'],
                      'unread': []}


def test_a_profile_list_is_read_only_where_the_selectors_narrow_it_to_one():
    classes, _templates = written(classes=[{'name': 'small-mig', 'mig_profile': ['1g.5gb', '1g.10gb']}])
    claim = claim_from(mig_template())
    claim['spec']['devices']['requests'][0]['exactly']['deviceClassName'] = 'small-mig'
    assert mdc.claim_demand([claim], CHART + classes, [pending_pod()])['demand'] == {'nvidia.com/mig-1g.5gb': 1}
    claim['spec']['devices']['requests'][0]['exactly'].pop('selectors')
    result = mdc.claim_demand([claim], CHART + classes, [pending_pod()])
    assert result['demand'] == {}
    assert result['unread'] == ['team-a/job-0-gpu: request gpu: its selectors leave the MIG profiles 1g.10gb, 1g.5gb '
                                'open (ambiguous)']


def test_requests_whose_device_cannot_be_read_are_reported_not_guessed():
    base = claim_from(mig_template())
    cases = {
        'any-mig': ({'deviceClassName': 'mig.nvidia.com'}, 'no MIG profile in the CEL of DeviceClass mig.nvidia.com'),
        'cel': ({'deviceClassName': 'mig.nvidia.com', 'selectors': [{'cel': {'expression': (
            "device.attributes['gpu.nvidia.com'].profile.startsWith('1g') || device.attributes['gpu.nvidia.com']"
            ".profile == '2g.10gb'")}}]}, 'no MIG profile'),
        'garbled': ({'deviceClassName': 'mig.nvidia.com', 'selectors': [{'cel': {'expression': 'size(device) > 1'}}]},
                    'selector not read'),
        'all': ({'deviceClassName': 'mig.nvidia.com', 'allocationMode': 'All'}, 'allocationMode All'),
        'missing': ({'deviceClassName': 'nope'}, 'DeviceClass nope not found'),
        'conflict': ({'deviceClassName': 'mig.nvidia.com', 'selectors': [
            {'cel': {'expression': "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"}},
            {'cel': {'expression': "device.attributes['gpu.nvidia.com'].profile == '2g.10gb'"}}]}, 'conflicting'),
    }
    for name, (exact, why) in sorted(cases.items()):
        claim = copy.deepcopy(base)
        claim['spec']['devices']['requests'] = [{'name': name, 'exactly': exact}]
        result = mdc.claim_demand([claim], CHART, [pending_pod()])
        assert result['demand'] == {} and result['claims'] == [], name
        assert len(result['unread']) == 1 and result['unread'][0].startswith('team-a/job-0-gpu: request %s: ' % name)
        assert why in result['unread'][0], result['unread']
    for choices, why in (([{'name': 'a'}], 'the first choice of its prioritized list (a): no deviceClassName'),
                         ([], 'a prioritized list (firstAvailable) without a first subrequest'),
                         ([{'name': 'all', 'deviceClassName': 'mig.nvidia.com', 'allocationMode': 'All'},
                           base['spec']['devices']['requests'][0]['exactly']],
                          'the first choice of its prioritized list (all): allocationMode All')):
        claim = copy.deepcopy(base)
        claim['spec']['devices']['requests'] = [{'name': 'pick', 'firstAvailable': choices}]
        result = mdc.claim_demand([claim], CHART, [pending_pod()])
        assert result['demand'] == {} and len(result['unread']) == 1 and why in result['unread'][0], result


def test_a_prioritized_list_counts_its_first_choice_only():
    """The scheduler takes the first subrequest it can allocate; a Pending pod's claim could take none, so the
    demand is the first, what the owner asked for first."""
    first = dict(claim_from(mig_template(count=2))['spec']['devices']['requests'][0]['exactly'], name='two-small')
    second = dict(claim_from(mig_template('2g.10gb'))['spec']['devices']['requests'][0]['exactly'], name='one-big')
    for order, demand in (([first, second], {'nvidia.com/mig-1g.5gb': 2}), ([second, first], {'nvidia.com/mig-2g.10gb': 1})):
        claim = claim_from(mig_template())
        claim['spec']['devices']['requests'] = [{'name': 'gpu', 'firstAvailable': order}]
        result = mdc.claim_demand([claim], CHART, [pending_pod()])
        assert result == {'demand': demand, 'claims': ['team-a/job-0-gpu'], 'unread': []}


def test_a_reversed_comparison_and_the_index_form_read_alike():
    for expression in ("'1g.5gb' == device.attributes['gpu.nvidia.com']['profile']",
                       "device.attributes[\"gpu.nvidia.com\"].profile in ['1g.5gb']"):
        claim = claim_from(mig_template())
        claim['spec']['devices']['requests'][0]['exactly']['selectors'] = [{'cel': {'expression': expression}}]
        assert mdc.claim_demand([claim], CHART, [pending_pod()])['demand'] == {'nvidia.com/mig-1g.5gb': 1}


def node(name, requested, pods, devices=()):
    return {'name': name, 'requested': requested, 'gpu_pods': pods, 'dra_devices': list(devices)}


def device(name, type_, profile=None, allocated=True, pods=()):
    return {'name': name, 'type': type_, 'profile': profile, 'allocated': allocated, 'pods': list(pods)}


def test_allocated_dra_devices_count_as_in_use_and_make_the_node_busy():
    nodes = [node('node-a', {}, [], [device('gpu-0-mig-1g5gb-19-0', 'mig', '1g.5gb', pods=['team-a/job-1']),
                                     device('gpu-0-mig-1g5gb-19-1', 'mig', '1g.5gb', pods=['team-a/job-2']),
                                     device('gpu-0-mig-1g5gb-19-2', 'mig', '1g.5gb', allocated=False),
                                     device('gpu-1', 'gpu', pods=['team-a/job-3'])]),
             node('node-b', {'nvidia.com/gpu': 1}, ['team-b/x']),
             node('node-c', None, None)]
    out = mdc.nodes_with_dra_use(nodes)
    assert out[0]['requested'] == {'nvidia.com/mig-1g.5gb': 2, 'nvidia.com/gpu': 1}
    assert out[0]['gpu_pods'] == ['team-a/job-1', 'team-a/job-2', 'team-a/job-3']
    assert out[1] == nodes[1] and out[2] is nodes[2]
    # a pod that asks for nvidia.com/gpu, served through DRA (the class's extendedResourceName): counted once
    served = node('node-d', {'nvidia.com/gpu': 1}, ['team-a/ext'], [device('gpu-0', 'gpu', pods=['team-a/ext'])])
    assert mdc.nodes_with_dra_use([served]) == [served]
    assert nodes[0]['requested'] == {}
    # with pending_demand: in use + the Pending pods' claims
    claim = claim_from(mig_template())
    claimed = mdc.claim_demand([claim], CHART, [pending_pod()])['demand']
    result = pending_demand([pending_pod()], out[:2], claimed=claimed)
    assert result['demand'] == {'nvidia.com/gpu': 2, 'nvidia.com/mig-1g.5gb': 3}
