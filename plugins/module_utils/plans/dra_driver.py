# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The dra role's part ``driver``: NVIDIA's standalone DRA driver chart (``dra-driver-nvidia-gpu``, formerly
``nvidia-dra-driver-gpu``) installed with Helm. Pure: the typed inputs and what the role read in; the chart, its
values and every reason not to install, out.

The facts (docs/facts.md, "NVIDIA's DRA driver chart"): the chart's values ``image.repository`` and
``image.tag`` (the tag defaults to ``v<appVersion>``), ``imagePullSecrets`` (``[{name}]``), ``featureGates`` (a
mapping of gate name to bool, given to the driver as ``FEATURE_GATES``), ``kubeletPlugin.nodeSelector``,
``.tolerations`` and ``.affinity`` (by default every node NFD found an NVIDIA PCI device on, or labelled
``nvidia.com/gpu.present=true``); the gates each release knows are in gpu/dra_gates.py. OpenShift's scheduler runs
the DynamicResources plugin when the Scheduler ``cluster`` has ``spec.profileCustomizations.
dynamicResourceAllocation: Enabled`` or the cluster's feature gate DynamicResourceAllocation is on.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common import image_ref
from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_dns_label, string_errors, type_name, unknown_key_errors)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra import DRA_NODE_LABEL, STRATEGY_GATES
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra_gates import gate_mapping, release_gates, release_minor
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import merge_tolerations, toleration_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.gpucluster import MIN_KUBERNETES, kubernetes_version

INPUTS = ('chart_ref', 'chart_repo_url', 'chart_version', 'release_name', 'namespace', 'feature_gates', 'nodes',
          'tolerations', 'image', 'values', 'claim_templates')
NODES = ('all', 'labelled')
DRA_SCHEDULER_GATE = 'DynamicResourceAllocation'
_OCI = 'oci://'


def _image_values(image, chart_version, mirror, errors, warnings):
    """(image values, the driver version the image names) from dra_driver_image through the mirror's rules."""
    if not image:
        return {}, ''
    try:
        parsed = image_ref.parse_image(image)
    except image_ref.ImageRefError as exc:
        errors.append('dra_driver_image: %s' % exc)
        return {}, ''
    if parsed['digest'] or not parsed['tag']:
        errors.append("dra_driver_image '%s' must be <repository>:<tag>: the chart pulls image.repository:image.tag "
                      "(no digest)" % image)
        return {}, ''
    repository = image.rsplit(':', 1)[0]
    mirrored = image_ref.mirror_reference(repository, mirror.get('repositories') or [])
    minor, chart_minor = release_minor(parsed['tag']), release_minor(chart_version or '')
    if minor is not None and chart_minor is not None and minor != chart_minor:
        warnings.append('dra_driver_image %s is not of the release of dra_driver_chart_version %s: set both to one '
                        'release' % (image, chart_version))
    return {'repository': mirrored or repository, 'tag': parsed['tag']}, parsed['tag']


def _chart(config, mirror):
    """(chart_ref, repo_url) with an OCI chart pulled through the mirror's rules."""
    ref, url = config.get('chart_ref') or '', config.get('chart_repo_url') or ''
    if ref.startswith(_OCI):
        mirrored = image_ref.mirror_reference(ref[len(_OCI):], mirror.get('repositories') or [])
        if mirrored:
            ref = _OCI + mirrored
    return ref, url


def _gate_map(gates, release, known, errors):
    gate_map, enabled, bad = gate_mapping(gates)
    errors.extend('dra_driver_feature_gates: ' + e for e in bad)
    unknown = sorted(name for name in gate_map if name not in known)
    if unknown and not known:
        errors.append('dra_driver_feature_gates: the DRA driver %s takes no feature gates (%s): use driver v25.8 or '
                      'later, or leave the gates out' % (release, ', '.join(unknown)))
    for name in unknown if known else ():
        errors.append("dra_driver_feature_gates: the DRA driver %s does not know the feature gate '%s' and would not "
                      "start with it: remove it or choose a driver release that has it (%s knows: %s)"
                      % (release, name, release, ', '.join(known)))
    return gate_map, enabled


def _template_errors(templates, release, known, enabled):
    """A dra_claim_templates entry whose share needs a gate this driver release has, but that is off."""
    errors = []
    for index, entry in enumerate(templates if isinstance(templates, list) else []):
        share = entry.get('sharing') if isinstance(entry, dict) else None
        strategy = share.get('strategy') if isinstance(share, dict) else None
        gate = STRATEGY_GATES.get(strategy) if isinstance(strategy, str) else None
        if gate and gate in known and gate not in enabled:
            errors.append("dra_claim_templates[%d] (%s) asks for sharing with %s, but the DRA driver %s runs with its "
                          "feature gate %s off and refuses such claims: add %s to dra_driver_feature_gates or remove "
                          "the share"
                          % (index, entry.get('name') or '?', share['strategy'], release, gate, gate))
    return errors


def cluster_errors(reads):
    """Why the cluster cannot run NVIDIA's DRA driver now, one sentence each, in the order a user fixes them."""
    errors = []
    version = kubernetes_version(reads.get('kubernetes_version'))
    if version is None or version < MIN_KUBERNETES:
        running = '%d.%d' % version if version else 'an unknown version'
        errors.append('Kubernetes >= %d.%d needed for the DRA driver (resource.k8s.io/v1), the cluster runs %s: '
                      'upgrade the cluster first' % (MIN_KUBERNETES + (running,)))
    if not reads.get('resource_v1_served'):
        errors.append('the API server does not serve resource.k8s.io/v1 (DeviceClass): turn Dynamic Resource '
                      'Allocation on (Kubernetes >= 1.34; on OpenShift >= 4.21)')
    if reads.get('openshift'):
        scheduler = reads.get('scheduler') or {}
        setting = ((scheduler.get('spec') or {}).get('profileCustomizations') or {}).get('dynamicResourceAllocation')
        if setting != 'Enabled' and DRA_SCHEDULER_GATE not in (reads.get('openshift_feature_gates') or []):
            errors.append("OpenShift's scheduler does not allocate DRA claims: the Scheduler 'cluster' has "
                          "spec.profileCustomizations.dynamicResourceAllocation %s and the feature gate %s is off; "
                          "set it to Enabled (oc patch scheduler cluster --type merge -p '{\"spec\": "
                          "{\"profileCustomizations\": {\"dynamicResourceAllocation\": \"Enabled\"}}}')"
                          % (repr(setting) if setting else 'unset', DRA_SCHEDULER_GATE))
    return errors


def _input_errors(config):
    errors = unknown_key_errors(config, INPUTS, 'driver inputs')
    for name in ('chart_ref', 'chart_repo_url', 'chart_version', 'image'):
        if config.get(name) is not None:
            errors.extend(string_errors(config[name], 'dra_driver_' + name))
    if not config.get('chart_ref'):
        errors.append('dra_driver_chart_ref must name the chart: a repository chart, an oci:// reference or a path')
    for name in ('release_name', 'namespace'):
        if not is_dns_label(config.get(name)):
            errors.append('dra_driver_%s must be a DNS label (lowercase letters, digits, -), got %r'
                          % (name, config.get(name)))
    if config.get('namespace') == 'default':
        errors.append("dra_driver_namespace must not be 'default': the chart refuses it")
    if config.get('nodes', 'all') not in NODES:
        errors.append('dra_driver_nodes must be one of %s, got %r' % (', '.join(NODES), config.get('nodes')))
    errors.extend(toleration_errors(config.get('tolerations') or [], 'dra_driver_tolerations'))
    if not isinstance(config.get('values') or {}, dict):
        errors.append('dra_driver_values must be a mapping of chart values, got %s' % type_name(config['values']))
    return errors


def driver_plan(config, reads=None, mirror_result=None):
    """What the ``driver`` part installs: {errors, warnings, chart_ref, chart_repo_url, chart_version,
    release_name, namespace, helm_values, values_diff ({before, after} of the release's values; None when equal),
    summary}.

    ``config``: the typed inputs (INPUTS, the role's dra_driver_* variables; claim_templates is
    dra_claim_templates). ``reads``: kubernetes_version (the server's gitVersion, 'v1.36.3'),
    resource_v1_served, openshift (config.openshift.io served), scheduler (the Scheduler ``cluster``),
    openshift_feature_gates (the names the FeatureGate ``cluster`` reports enabled), release (helm_info's status of
    the release: its ``values`` as given at install; None when not installed). ``mirror_result``: the mirror
    role's fact (its ``repositories`` rules and ``pull_secret``). On any error, helm_values is None.
    """
    config, reads = config or {}, reads or {}
    mirror = mirror_result if isinstance(mirror_result, dict) else {}
    errors, warnings = _input_errors(config), []
    image, tag = _image_values(config.get('image'), config.get('chart_version'), mirror, errors, warnings)
    release, known = release_gates(tag or config.get('chart_version') or '')
    gate_map, enabled = _gate_map(config.get('feature_gates') or [], release, known, errors)
    errors.extend(_template_errors(config.get('claim_templates'), release, known, enabled))
    errors.extend(cluster_errors(reads))
    chart_ref, repo_url = _chart(config, mirror)
    summary = {'installed': isinstance(reads.get('release'), dict) and bool(reads['release']),
               'release_name': config.get('release_name'), 'namespace': config.get('namespace'),
               'chart_ref': chart_ref, 'chart_version': config.get('chart_version') or None,
               'driver_release': release, 'feature_gates': gate_map, 'nodes': config.get('nodes', 'all')}
    out = {'errors': errors, 'warnings': warnings, 'chart_ref': chart_ref, 'chart_repo_url': repo_url,
           'chart_version': config.get('chart_version') or '', 'release_name': config.get('release_name'),
           'namespace': config.get('namespace'), 'helm_values': None, 'values_diff': None, 'summary': summary}
    if errors:
        return out
    values = {'featureGates': gate_map} if gate_map else {}
    if image:
        values['image'] = image
    secret = mirror.get('pull_secret') if mirror.get('platform') == 'kubernetes' else None
    if isinstance(secret, dict) and secret.get('name') and secret.get('namespace') == config.get('namespace'):
        values['imagePullSecrets'] = [{'name': secret['name']}]
    plugin = {}
    if config.get('nodes') == 'labelled':
        plugin['nodeSelector'] = {DRA_NODE_LABEL: 'true'}
    if config.get('tolerations'):
        plugin['tolerations'] = merge_tolerations([], config['tolerations'])
    if plugin:
        values['kubeletPlugin'] = plugin
    out['helm_values'] = deep_merge(values, config.get('values') or {})
    release = reads.get('release') if isinstance(reads.get('release'), dict) else None
    before = (release.get('values') or {}) if release else None
    out['values_diff'] = None if before == out['helm_values'] else {'before': before, 'after': out['helm_values']}
    return out
