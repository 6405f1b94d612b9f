# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""mirror_chain: what the mirror role publishes and what the install roles take from it."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror import mirror_plan
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror_chain import (
    NFD_CHART_REPOSITORY, chart_mirror_values, install_sources, nfd_chart_mirror_values)

MIRROR = 'mirror.example.com:8443'
OPENSHIFT = {'platform': 'openshift', 'registry': MIRROR, 'openshift_version': '4.18',
             'repositories': ['nvcr.io/nvidia', 'registry.redhat.io'], 'pull_secret_names': ['gpuops-mirror-pull']}
EMPTY = {'nfd_olm_source': '', 'nfd_olm_source_namespace': ''}
GPU_EMPTY = {'gpu_operator_olm_source': '', 'gpu_operator_olm_source_namespace': ''}


def published(**extra):
    config = dict(OPENSHIFT, **extra)
    plan = mirror_plan(config)
    assert plan['errors'] == []
    return plan['result']


def test_the_published_result():
    result = published()
    assert result['platform'] == 'openshift' and result['registry'] == MIRROR
    assert [(c['name'], c['namespace'], c['packages']) for c in result['catalog_sources']] == [
        ('redhat-operators-mirror', 'openshift-marketplace', ['nfd']),
        ('certified-operators-mirror', 'openshift-marketplace', ['gpu-operator-certified'])]
    assert result['pull_secret'] == {'name': 'pull-secret', 'namespace': 'openshift-config'}
    k8s = mirror_plan(dict(OPENSHIFT, platform='kubernetes', operator_namespace='gpu-operator', cluster_policy=False))
    assert k8s['result']['pull_secret'] == {'name': 'gpuops-mirror-pull', 'namespace': 'gpu-operator'}
    assert k8s['result']['catalog_sources'] == []
    anonymous = mirror_plan(dict(OPENSHIFT, pull_secret_names=[]))['result']
    assert anonymous['pull_secret'] is None
    assert 'password' not in repr(anonymous)


def test_without_the_mirror_the_public_catalogs():
    assert install_sources('nfd', EMPTY) == {'source': 'redhat-operators', 'source_namespace': 'openshift-marketplace',
                                             'origin': 'default', 'helm_values': {}, 'errors': [], 'warnings': []}
    gpu = install_sources('gpu_operator', GPU_EMPTY, {})
    assert (gpu['source'], gpu['origin']) == ('certified-operators', 'default')


def test_the_mirrored_catalog_of_the_package():
    result = published()
    nfd = install_sources('nfd', EMPTY, result)
    assert (nfd['source'], nfd['source_namespace'], nfd['origin']) == (
        'redhat-operators-mirror', 'openshift-marketplace', 'mirror')
    gpu = install_sources('gpu_operator', GPU_EMPTY, result)
    assert (gpu['source'], gpu['origin'], gpu['helm_values']) == ('certified-operators-mirror', 'mirror', {})
    # a catalog in another namespace brings its namespace; an explicit namespace still wins
    result = published(catalog_sources=[{'name': 'gpu-cat', 'namespace': 'olm-mirrors',
                                         'index': 'certified-operator-index', 'packages': ['gpu-operator-certified']},
                                        {'name': 'rh-cat', 'index': 'redhat-operator-index', 'packages': ['nfd']}])
    assert install_sources('gpu_operator', GPU_EMPTY, result)['source_namespace'] == 'olm-mirrors'
    assert install_sources('gpu_operator', dict(GPU_EMPTY, gpu_operator_olm_source_namespace='x'),
                           result)['source_namespace'] == 'x'
    # a renamed package is looked up by its name
    assert install_sources('nfd', dict(EMPTY, nfd_olm_package='gpu-operator-certified'), result)['source'] == 'gpu-cat'


def test_a_variable_set_by_the_user_wins():
    result = published()
    own = install_sources('nfd', dict(EMPTY, nfd_olm_source='my-catalog'), result)
    assert (own['source'], own['source_namespace'], own['origin']) == ('my-catalog', 'openshift-marketplace', 'variable')
    # naming one of the mirrored catalogs takes its namespace
    result = published(catalog_sources=[{'name': 'c', 'namespace': 'ns2', 'index': 'redhat-operator-index'}])
    assert install_sources('nfd', dict(EMPTY, nfd_olm_source='c'), result)['source_namespace'] == 'ns2'


def test_no_mirrored_catalog_carries_the_package():
    result = published(catalog_sources=[{'name': 'only-nfd', 'index': 'redhat-operator-index', 'packages': ['nfd']}])
    gpu = install_sources('gpu_operator', GPU_EMPTY, result)
    assert gpu['source'] == '' and len(gpu['errors']) == 1
    assert 'only-nfd' in gpu['errors'][0] and 'gpu_operator_olm_source' in gpu['errors'][0]
    assert install_sources('gpu_operator', dict(GPU_EMPTY, gpu_operator_olm_source='x'), result)['errors'] == []
    assert 'must be the mapping' in install_sources('nfd', EMPTY, 'text')['errors'][0]


def test_kubernetes_mirror_chart_values():
    plan = mirror_plan(dict(OPENSHIFT, platform='kubernetes', operator_namespace='gpu-operator', cluster_policy=False,
                            repositories=['nvcr.io/nvidia']))
    values = install_sources('gpu_operator', GPU_EMPTY, plan['result'])['helm_values']
    assert values['operator'] == {'repository': MIRROR + '/nvidia', 'imagePullSecrets': ['gpuops-mirror-pull'],
                                  'initContainer': {'repository': MIRROR + '/nvidia'}}
    assert values['driver']['manager'] == {'repository': MIRROR + '/nvidia/cloud-native'}
    assert values['dcgmExporter'] == {'repository': MIRROR + '/nvidia/k8s'}
    assert install_sources('nfd', EMPTY, plan['result'])['helm_values'] == {}
    # only what the rules cover; no secret when anonymous
    assert chart_mirror_values([{'source': 'ghcr.io/x', 'mirror': 'm/x'}]) == {}
    assert chart_mirror_values([{'source': 'nvcr.io', 'mirror': 'm'}])['gfd'] == {'repository': 'm/nvidia'}


def test_kubernetes_mirror_nfd_chart_values():
    # the chart's one image, through a rule for its registry path; the pull Secret where the chart's pods run
    plan = mirror_plan(dict(OPENSHIFT, platform='kubernetes', operator_namespace='node-feature-discovery',
                            cluster_policy=False, repositories=['nvcr.io/nvidia', 'registry.k8s.io/nfd']))
    assert plan['errors'] == []
    nfd = install_sources('nfd', dict(EMPTY, nfd_namespace='node-feature-discovery'), plan['result'])
    assert nfd['helm_values'] == {'image': {'repository': MIRROR + '/nfd/node-feature-discovery'},
                                  'imagePullSecrets': [{'name': 'gpuops-mirror-pull'}]}
    assert nfd['warnings'] == [] and nfd['errors'] == []
    # the gpu_operator role is not given the NFD image, nor warned about it
    gpu = install_sources('gpu_operator', GPU_EMPTY, plan['result'])
    assert 'image' not in gpu['helm_values'] and gpu['warnings'] == []
    # the OpenShift mirror: the IDMS/ITMS and the global pull secret cover the pulls, no values
    assert install_sources('nfd', dict(EMPTY, nfd_namespace='openshift-nfd'), published()) == dict(
        install_sources('nfd', EMPTY, published()), helm_values={}, warnings=[])


def test_nfd_chart_values_name_what_the_mirror_leaves_public():
    secret = {'name': 'gpuops-mirror-pull', 'namespace': 'gpu-operator'}
    values, warnings = nfd_chart_mirror_values([{'source': 'nvcr.io/nvidia', 'mirror': 'm/nvidia'}], secret,
                                               'node-feature-discovery')
    assert values == {}
    assert len(warnings) == 2
    assert NFD_CHART_REPOSITORY in warnings[0] and 'nfd_helm_values.image.repository' in warnings[0]
    assert warnings[1].startswith('the mirror pull Secret gpu-operator/gpuops-mirror-pull is not in the NFD '
                                  'namespace node-feature-discovery')
    # what the user's own values set is not warned about
    own = {'image': {'repository': 'm/nfd'}, 'imagePullSecrets': [{'name': 'mine'}]}
    assert nfd_chart_mirror_values([], secret, 'node-feature-discovery', own) == ({}, [])
    # a rule for the whole registry, keeping the host (one proxy repository per upstream registry); anonymous
    rule = [{'source': 'registry.k8s.io', 'mirror': 'art.example.com/registry.k8s.io'}]
    assert nfd_chart_mirror_values(rule, None, 'x') == (
        {'image': {'repository': 'art.example.com/registry.k8s.io/nfd/node-feature-discovery'}}, [])


def test_bad_calls():
    with pytest.raises(ValueError):
        install_sources('hami', {})
    with pytest.raises(ValueError):
        install_sources('nfd', 'x')
