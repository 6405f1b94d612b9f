# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one list of the images and Helm charts the collection's roles pull, for the mirror role's oc-mirror
image list. Pure, no I/O.

The GPU operator's operands (driver, toolkit, device plugin, DCGM, DCGM exporter, GFD, MIG manager,
validator, ...) are not here: they come from the gpu-operator CSV (``relatedImages``, the operator's
``*_IMAGE`` environment) and from the operator package of the mirrored catalog. A role that gains an
image or chart variable must add it here: tests/unit/plugins/module_utils/plans/test_mirror_images.py
reads every role's defaults and argument specs and fails otherwise.

Facts used (docs/facts.md#air-gapped-mirrors): oc-mirror v2 ``ImageSetConfiguration``
``mirror.helm.repositories[{name, url, charts[{name, version}]}]`` and ``mirror.helm.local[{name, path}]``;
oc-mirror mirrors the images a listed chart renders.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common import image_ref

# Images the roles run themselves: (role, variable, default in the role's defaults/main.yml).
# An empty default: listed only when the variable is set.
COLLECTION_IMAGES = (
    ('smoke_test', 'smoke_test_image', 'nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04'),
    ('smoke_test', 'smoke_test_load_image', ''),
    # NVIDIA's DRA driver (dra role, part driver): the image its chart runs, given to the chart as image.repository/tag
    ('dra', 'dra_driver_image', 'registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1'),
)

# Helm charts the roles install (their images are the chart's): role, the chart variables, their defaults,
# and the switch (variable, value) under which the role installs it (None: whenever the chart is set).
COLLECTION_CHARTS = (
    {'role': 'nfd', 'ref': ('nfd_helm_chart_ref', ''), 'repo_url': ('nfd_helm_chart_repo_url', ''),
     'version': ('nfd_helm_chart_version', ''), 'switch': ('nfd_install_method', 'helm')},
    {'role': 'gpu_operator', 'ref': ('gpu_operator_helm_chart_ref', ''),
     'repo_url': ('gpu_operator_helm_chart_repo_url', ''), 'version': ('gpu_operator_helm_chart_version', ''),
     'switch': ('gpu_operator_install_method', 'helm')},
    # NVIDIA's DRA driver chart (dra role, part driver); an oci:// chart is listed as an image
    {'role': 'dra', 'ref': ('dra_driver_chart_ref', 'oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu'),
     'repo_url': ('dra_driver_chart_repo_url', ''), 'version': ('dra_driver_chart_version', '0.4.1'), 'switch': None},
    {'role': 'hami', 'ref': ('hami_chart_ref', ''), 'repo_url': ('hami_chart_repo_url', ''),
     'version': ('hami_chart_version', ''), 'switch': None},
    {'role': 'monitoring', 'ref': ('monitoring_console_plugin_chart_ref', 'console-plugin-nvidia-gpu'),
     'repo_url': ('monitoring_console_plugin_chart_repo_url', ''),
     'version': ('monitoring_console_plugin_chart_version', ''),
     'switch': ('monitoring_console_plugin_install', True)},
    # the upgrade role's targets (upgrade_method helm): what an air-gapped upgrade pulls
    {'role': 'upgrade', 'ref': ('upgrade_nfd_helm_chart_ref', ''), 'repo_url': ('upgrade_nfd_helm_chart_repo_url', ''),
     'version': ('upgrade_nfd_helm_chart_version', ''), 'switch': ('upgrade_method', 'helm')},
    {'role': 'upgrade', 'ref': ('upgrade_gpu_operator_helm_chart_ref', ''),
     'repo_url': ('upgrade_gpu_operator_helm_chart_repo_url', ''),
     'version': ('upgrade_gpu_operator_helm_chart_version', ''), 'switch': ('upgrade_method', 'helm')},
)

_OCI = 'oci://'
_LOCAL_RE = re.compile(r'^(/|\./|\.\./|~)|\.tgz$')


def variable_names(roles=None):
    """Every role variable the list reads (of ``roles``, all when None); the mirror role passes their values."""
    names = [variable for role, variable, _default in COLLECTION_IMAGES if roles is None or role in roles]
    for chart in COLLECTION_CHARTS:
        if roles is not None and chart['role'] not in roles:
            continue
        names.extend(chart[key][0] for key in ('ref', 'repo_url', 'version'))
        if chart['switch']:
            names.append(chart['switch'][0])
    return names


def _value(values, spec):
    name, default = spec
    value = values.get(name)
    return default if value in (None, '') else value


def collection_images(values=None):
    """``{images, charts, errors, warnings}`` for the roles' variables as set (``values``, by name; unset or
    empty ones take the role default). ``charts``: ``{'repositories': [...], 'local': [...]}`` in oc-mirror's
    ``mirror.helm`` shape (empty lists when none)."""
    values = values if isinstance(values, dict) else {}
    out = {'images': [], 'charts': {'repositories': [], 'local': []}, 'errors': [], 'warnings': []}
    for _role, variable, default in COLLECTION_IMAGES:
        image = _value(values, (variable, default))
        if not image:
            continue
        try:
            image_ref.parse_image(image)
        except image_ref.ImageRefError as exc:
            out['errors'].append('%s: %s' % (variable, exc))
            continue
        out['images'].append(image)
    repositories = {}
    for chart in COLLECTION_CHARTS:
        _chart(chart, values, repositories, out)
    out['charts']['repositories'] = [repositories[url] for url in sorted(repositories)]
    return out


def _switched(value, wanted):
    if isinstance(wanted, bool):  # a boolean switch given on the command line arrives as text
        return str(value).lower() in ('true', 'yes', 'on', '1', 'y') if wanted else value in (False, None, '')
    return value == wanted


def _chart(chart, values, repositories, out):
    ref, url, version = (_value(values, chart[key]) for key in ('ref', 'repo_url', 'version'))
    switch = chart['switch']
    used = switch is None or _switched(_value(values, (switch[0], None)), switch[1])
    if not ref or not isinstance(ref, str):
        return
    if ref.startswith(_OCI):
        out['images'].append(ref[len(_OCI):] + (':' + str(version) if version else ''))
        return
    if _LOCAL_RE.search(ref) and not url:
        out['charts']['local'].append({'name': ref.rstrip('/').rsplit('/', 1)[-1], 'path': ref})
        return
    if not url:
        if used:
            out['warnings'].append(
                '%s %s is not in the image list: set %s (the chart repository, or the mirror of it) or give a '
                'chart archive' % (chart['ref'][0], ref, chart['repo_url'][0]))
        return
    entry = {'name': ref.rsplit('/', 1)[-1]}
    if version:
        entry['version'] = str(version)
    repo = repositories.setdefault(url, {'name': '%s-charts' % chart['role'].replace('_', '-'), 'url': url,
                                         'charts': []})
    if entry not in repo['charts']:
        repo['charts'].append(entry)
