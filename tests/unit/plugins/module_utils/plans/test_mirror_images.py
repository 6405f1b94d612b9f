# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""mirror_images: the one list of the collection's images and charts covers every role default."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import glob
import os
import re

import yaml

from ansible_collections.gpuops.gpu.plugins.module_utils.common import image_ref
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror import mirror_plan
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror_images import (
    COLLECTION_CHARTS, COLLECTION_IMAGES, collection_images, variable_names)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), *(['..'] * 5)))
# Variables named like images that hold no image reference the mirror could list (with the reason).
NOT_REFERENCES = {
    'vgpu_driver_image': 'an image name inside the private vgpu_driver_repository',
    'gpu_operator_driver_image': 'an image name inside gpu_operator_driver_repository (an operand, listed from the CSV)',
    'upgrade_driver_image': 'an image name inside upgrade_driver_repository (the driver operand the operator renders)',
    'dra_gpucluster_driver_image': ('an image name inside dra_gpucluster_driver_repository, empty by default: the GPU '
                                    "operator's own default for the DRA driver it deploys"),
}
IMAGE_KEY = re.compile(r'_image$')
CHART_KEY = re.compile(r'_chart_ref$')
# a reference with a registry host and a tag or digest, as written in code
LITERAL = re.compile(r'^[a-z0-9.-]+\.[a-z]{2,}(:[0-9]+)?/[a-z0-9._/-]+(:[A-Za-z0-9_.-]+|@sha256:[0-9a-f]{64})$')


def _role_defaults():
    """{(role, variable): default} from every roles/*/defaults/main.yml and meta/argument_specs.yml."""
    out = {}
    for path in glob.glob(os.path.join(REPO, 'roles', '*', 'defaults', 'main.yml')):
        role = path.split(os.sep)[-3]
        for key, value in (yaml.safe_load(open(path)) or {}).items():
            out[(role, key)] = value
    for path in glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'argument_specs.yml')):
        role = path.split(os.sep)[-3]
        for spec in (yaml.safe_load(open(path)) or {}).get('argument_specs', {}).values():
            for key, option in (spec.get('options') or {}).items():
                if isinstance(option, dict) and 'default' in option:
                    out.setdefault((role, key), option['default'])
    return out


def _is_reference(value):
    if not isinstance(value, str) or '/' not in value:
        return False
    try:
        parsed = image_ref.parse_image(value)
    except image_ref.ImageRefError:
        return False
    return parsed['explicit_registry'] and bool(parsed['tag'] or parsed['digest'])


def test_roles_were_found():
    defaults = _role_defaults()
    assert ('smoke_test', 'smoke_test_image') in defaults and ('mirror', 'mirror_registry') in defaults


def test_every_role_image_default_is_in_the_list():
    listed = dict(((role, variable), default) for role, variable, default in COLLECTION_IMAGES)
    missing = []
    for (role, key), value in sorted(_role_defaults().items()):
        if role == 'mirror' or key in NOT_REFERENCES:
            continue
        if IMAGE_KEY.search(key) or _is_reference(value):
            if listed.get((role, key), object()) != (value or ''):
                missing.append('%s: %s = %r' % (role, key, value))
    assert missing == [], ('add these image variables (with their defaults) to COLLECTION_IMAGES in '
                           'plans/mirror_images.py, or to NOT_REFERENCES here with the reason: %s' % missing)
    for (role, key), default in listed.items():
        assert _role_defaults().get((role, key), '') == default, '%s.%s changed its default' % (role, key)


def test_every_role_chart_is_in_the_list():
    defaults = _role_defaults()
    listed = {}
    for chart in COLLECTION_CHARTS:
        for field in ('ref', 'repo_url', 'version'):
            listed[(chart['role'], chart[field][0])] = chart[field][1]
    charts = [(role, key) for (role, key) in defaults if CHART_KEY.search(key) and role != 'mirror']
    assert charts, 'no *_chart_ref variable found'
    for role, key in charts:
        assert (role, key) in listed, '%s.%s: add the chart to COLLECTION_CHARTS in plans/mirror_images.py' % (role, key)
    for (role, key), default in listed.items():
        assert defaults.get((role, key)) == default, '%s.%s changed its default' % (role, key)


def test_no_image_literal_in_the_planners_escapes_the_list():
    """Image references written in plugins/module_utils (with a tag or digest) are the list's defaults."""
    listed = set(default for _r, _v, default in COLLECTION_IMAGES)
    found = []
    for path in glob.glob(os.path.join(REPO, 'plugins', 'module_utils', '*', '*.py')):
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and LITERAL.match(node.value):
                if node.value not in listed:
                    found.append('%s: %s' % (os.path.relpath(path, REPO), node.value))
    assert found == []


def test_collection_images_defaults_and_overrides():
    out = collection_images({})
    assert out['images'] == ['nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04',
                             'registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1',
                             'registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu:0.4.1']
    assert out['charts'] == {'repositories': [], 'local': []} and out['errors'] == [] and out['warnings'] == []
    out = collection_images({
        'smoke_test_image': 'registry.example.com/gpu/cuda-sample:1', 'smoke_test_load_image': 'quay.io/x/burn:2',
        'hami_chart_ref': 'hami-charts/hami', 'hami_chart_repo_url': 'https://charts.example.com/hami',
        'hami_chart_version': '2.10.0', 'gpu_operator_install_method': 'helm',
        'gpu_operator_helm_chart_ref': '/charts/gpu-operator-v25.10.1.tgz',
        'monitoring_console_plugin_install': True})
    assert out['images'][:2] == ['registry.example.com/gpu/cuda-sample:1', 'quay.io/x/burn:2']
    assert out['charts']['repositories'] == [{'name': 'hami-charts', 'url': 'https://charts.example.com/hami',
                                              'charts': [{'name': 'hami', 'version': '2.10.0'}]}]
    assert out['charts']['local'] == [{'name': 'gpu-operator-v25.10.1.tgz',
                                       'path': '/charts/gpu-operator-v25.10.1.tgz'}]
    # the console plugin is switched on but has no repository: said, not guessed
    assert len(out['warnings']) == 1 and 'monitoring_console_plugin_chart_repo_url' in out['warnings'][0]
    assert collection_images({'hami_chart_ref': 'oci://registry.example.com/charts/hami',
                              'hami_chart_version': '2.10.0'})['images'][-1] == 'registry.example.com/charts/hami:2.10.0'
    assert 'smoke_test_image' in collection_images({'smoke_test_image': 'Bad Image'})['errors'][0]
    assert collection_images({'monitoring_console_plugin_install': 'true'})['warnings'] != []
    assert collection_images({'monitoring_console_plugin_install': 'false'})['warnings'] == []
    assert set(variable_names(['hami'])) == {'hami_chart_ref', 'hami_chart_repo_url', 'hami_chart_version'}
    assert 'smoke_test_image' in variable_names()


def test_the_image_set_configuration_covers_the_collection():
    plan = mirror_plan({'platform': 'openshift', 'registry': 'mirror.example.com', 'openshift_version': '4.18',
                        'repositories': ['nvcr.io/nvidia', 'registry.redhat.io'],
                        'collection_values': {'hami_chart_ref': 'hami', 'hami_chart_repo_url': 'https://c.example.com'}})
    assert plan['errors'] == []
    isc = plan['image_set_configuration']['mirror']
    assert {'name': 'nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04'} in isc['additionalImages']
    assert isc['helm'] == {'repositories': [{'name': 'hami-charts', 'url': 'https://c.example.com',
                                             'charts': [{'name': 'hami'}]}]}
    assert [o['packages'] for o in isc['operators']] == [[{'name': 'nfd'}], [{'name': 'gpu-operator-certified'}]]
    bad = mirror_plan({'platform': 'openshift', 'registry': 'mirror.example.com', 'openshift_version': '4.18',
                       'repositories': ['nvcr.io/nvidia'], 'collection_values': {'smoke_test_load_image': 'UPPER:x'}})
    assert any(e.startswith('smoke_test_load_image') for e in bad['errors'])
