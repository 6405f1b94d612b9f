# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The GPU driver settings of the gpu_operator role: typed settings to ClusterPolicy spec fields,
per-pool NVIDIADriver documents, and NVIDIA's cross-field rules. Pure, no I/O.

* ``driver_overrides`` turns the typed settings (``version``, ``kernel_module_type``, ...) into a
  ClusterPolicy spec fragment; the role merges it on top of the raw overrides, so a typed setting
  wins over the same field in ``gpu_operator_cluster_policy_overrides``.
* ``pool_documents`` turns ``gpu_operator_driver_pools`` into NVIDIADriver objects (one per pool,
  ``spec.nodeSelector`` from the pool); a pool's unset fields take the role's typed settings.
* ``driver_rule_errors`` holds the rules the operator enforces only at reconcile time (docs/facts.md
  #driver-settings), so they fail before anything is written.
* ``pool_plan`` checks the pools against the NVIDIADriver CRD schema, the nodes (no node may be
  selected by two NVIDIADrivers) and the NVIDIADrivers already there (immutable fields), and names
  the NVIDIADrivers gpuops.gpu created for pools no longer declared, to delete (never one without
  the managed-by label: a user's own NVIDIADriver stays).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    Fields, Items, bool_errors, is_dns_subdomain, label_key_errors, label_value_errors, one_of, string_errors,
    type_name)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge, get_path
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    CLUSTER_POLICY_GROUP, LABEL_PRESENT, NVIDIA_DRIVER, is_managed, managed_by_labels)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of, meta_of, name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.common.selector import selector_matches
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.cluster_policy import schema_errors

NVIDIA_DRIVER_API_VERSION = '%s/%s' % (NVIDIA_DRIVER[0], NVIDIA_DRIVER[1])
NVIDIA_DRIVER_KIND = 'NVIDIADriver'
NVIDIA_DRIVER_CRD = NVIDIA_DRIVER[2] + '.' + CLUSTER_POLICY_GROUP
KERNEL_MODULE_TYPES = ('auto', 'open', 'proprietary')
# GDS versions from this one on work only with the open kernel modules (gpu-operator
# internal/consts/consts.go MinimumGDSVersionForOpenRM).
MIN_GDS_VERSION_FOR_OPEN = (2, 17, 5)
# fields the NVIDIADriver CRD marks immutable (x-kubernetes-validations self == oldSelf)
IMMUTABLE_FIELDS = ('driverType', 'usePrecompiled')

# typed setting -> ClusterPolicy spec path (the NVIDIADriver spec uses the same paths, but for
# use_ocp_driver_toolkit, which only the ClusterPolicy has)
SETTING_PATHS = (
    ('version', ('driver', 'version')),
    ('repository', ('driver', 'repository')),
    ('image', ('driver', 'image')),
    ('kernel_module_type', ('driver', 'kernelModuleType')),
    ('use_precompiled', ('driver', 'usePrecompiled')),
    ('rdma_enabled', ('driver', 'rdma', 'enabled')),
    ('rdma_use_host_mofed', ('driver', 'rdma', 'useHostMofed')),
    ('gds_enabled', ('gds', 'enabled')),
    ('use_ocp_driver_toolkit', ('operator', 'use_ocp_driver_toolkit')),
)
POOL_SETTINGS = ('version', 'repository', 'image', 'kernel_module_type', 'use_precompiled', 'rdma_enabled',
                 'rdma_use_host_mofed', 'gds_enabled')

_IMAGE_NAME = re.compile(r'^[a-zA-Z0-9\-]+$')    # the CRDs' pattern for driver.image (no registry, no tag)
_VERSION = re.compile(r'^[A-Za-z0-9_.:@-]+$')


def _str_setting(value, path):
    errors = string_errors(value, path)
    if not errors and value and not _VERSION.match(value):
        errors.append("%s '%s' must be an image tag or digest (letters, digits, '.', '-', '_', ':', '@')"
                      % (path, value))
    return errors


def image_name_errors(value, path):
    """Why ``value`` is not an image name alone (the CRDs' pattern: no registry, no tag)."""
    errors = string_errors(value, path)
    if not errors and value and not _IMAGE_NAME.match(value):
        errors.append("%s '%s' must be an image name only (letters, digits, '-'); the registry goes in the "
                      "repository setting, the tag in the version" % (path, value))
    return errors


def _node_selector_errors(value, path):
    if not isinstance(value, dict):
        return ['%s must be a mapping of node label to value, got %s' % (path, type_name(value))]
    errors = []
    for key in sorted(value, key=str):
        errors.extend('%s key %s %s' % (path, key, e) for e in label_key_errors(key))
        errors.extend('%s.%s %s' % (path, key, e) for e in label_value_errors(value[key]))
    return errors


def _name_errors(value, path):
    if not is_dns_subdomain(value):
        return ["%s '%s' must be a lowercase DNS name (letters, digits, '-', '.'): it names the NVIDIADriver"
                % (path, value)]
    return []


_SETTING_CHECKS = {
    'version': _str_setting,
    'repository': string_errors,
    'image': image_name_errors,
    'kernel_module_type': one_of(*KERNEL_MODULE_TYPES),
    'use_precompiled': bool_errors,
    'rdma_enabled': bool_errors,
    'rdma_use_host_mofed': bool_errors,
    'gds_enabled': bool_errors,
    'use_ocp_driver_toolkit': bool_errors,
}


def _spec_errors(value, path):
    if isinstance(value, dict):
        return []
    return ['%s must be a mapping of NVIDIADriver spec fields, got %s' % (path, type_name(value))]


POOL_FIELDS = Fields(dict(
    [('name', _name_errors), ('node_selector', _node_selector_errors)]
    + [(k, _SETTING_CHECKS[k]) for k in POOL_SETTINGS]
    + [('spec', _spec_errors)]),
    required={'name': 'the NVIDIADriver name of the pool'})


def _set(values):
    """The settings that are set: None and '' mean 'leave as it is'."""
    return dict((k, v) for k, v in (values or {}).items() if v is not None and v != '')


# --- typed settings -> spec -------------------------------------------------------------------

def settings_errors(settings, prefix='gpu_operator_driver_'):
    """Type errors of the typed settings (a mapping of short names, ``version``, ...), and of ``pools``."""
    if not isinstance(settings, dict):
        return ['the driver settings must be a mapping, got %s' % type_name(settings)]
    errors = []
    for key, check in _SETTING_CHECKS.items():
        value = settings.get(key)
        if value is not None and value != '':
            errors.extend(check(value, prefix + key))
    pools = settings.get('pools')
    if pools:
        errors.extend(Items(POOL_FIELDS)(pools, prefix + 'pools'))
        if isinstance(pools, list):
            names = [p.get('name') for p in pools if isinstance(p, dict)]
            dupes = sorted(set(n for n in names if n and names.count(n) > 1))
            if dupes:
                errors.append('%spools: pool names must be unique (each names an NVIDIADriver), repeated: %s'
                              % (prefix, ', '.join(dupes)))
    return errors


def spec_fragment(settings, paths=SETTING_PATHS):
    """The spec fields of the settings that are set."""
    out = {}
    for key, path in paths:
        value = _set(settings).get(key)
        if value is None:
            continue
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return out


def driver_overrides(settings):
    """ClusterPolicy spec fields of the typed settings; with pools, ``driver.useNvidiaDriverCRD: true``
    (the operator then deploys the driver from the NVIDIADriver objects, not from the ClusterPolicy)."""
    out = spec_fragment(settings or {})
    if (settings or {}).get('pools'):
        out.setdefault('driver', {})['useNvidiaDriverCRD'] = True
    return out


# --- NVIDIA's cross-field rules ---------------------------------------------------------------

def _version_tuple(text):
    parts = re.findall(r'\d+', str(text or ''))
    return tuple(int(p) for p in parts[:3]) + (0,) * (3 - len(parts[:3]))


def gds_needs_open(gds_version):
    """Whether this GDS version works only with the open kernel modules (a digest is assumed to)."""
    version = str(gds_version or '')
    if not version:
        return False
    if version.startswith('sha256'):
        return True
    return _version_tuple(version) >= MIN_GDS_VERSION_FOR_OPEN


def driver_rule_errors(spec, path='spec', driver_path=('driver',)):
    """Combinations the GPU operator refuses at reconcile time, for a ClusterPolicy spec
    (``driver_path=('driver',)``) or an NVIDIADriver spec (``driver_path=()``)."""
    spec = spec or {}
    driver = get_path(spec, driver_path) if driver_path else spec
    driver = driver if isinstance(driver, dict) else {}
    where = '.'.join((path,) + tuple(driver_path))
    errors = []
    if driver.get('usePrecompiled') is True:
        if not driver.get('version'):
            errors.append('%s.usePrecompiled needs %s.version: the driver branch (for example "570"); the operator '
                          'pulls the image tagged <version>-<kernel version> of each node' % (where, where))
        for feature, name in (('gds', 'GPUDirect Storage'), ('gdrcopy', 'GDRCopy')):
            if get_path(spec, (feature, 'enabled')) is True:
                errors.append('%s.%s.enabled: %s is not supported with precompiled drivers (%s.usePrecompiled); '
                              'turn one of them off' % (path, feature, name, where))
    if get_path(spec, ('gds', 'enabled')) is True:
        gds_version = get_path(spec, ('gds', 'version'))
        kmt = driver.get('kernelModuleType') or 'auto'
        if gds_needs_open(gds_version) and kmt != 'open':
            errors.append("%s.gds.enabled: GPUDirect Storage %s works only with the open kernel modules; set %s."
                          "kernelModuleType to open (it is %s)" % (path, gds_version, where, kmt))
    return errors


# --- NVIDIADriver objects per pool ------------------------------------------------------------

def pool_selector(pool):
    """The pool's node selector as the operator applies it (none: every node with GPUs)."""
    return dict(pool.get('node_selector') or {}) or {LABEL_PRESENT: 'true'}


def pool_documents(pools, defaults=None):
    """One NVIDIADriver per pool: the pool's ``spec`` (raw fields), under the pool's typed settings,
    which fall back to ``defaults`` (the role's typed settings)."""
    docs = []
    for pool in pools or []:
        settings = dict(_set(dict((k, (defaults or {}).get(k)) for k in POOL_SETTINGS)), **_set(
            dict((k, pool.get(k)) for k in POOL_SETTINGS)))
        typed = spec_fragment(settings)
        spec = deep_merge({'driverType': 'gpu'}, pool.get('spec') or {})
        spec = deep_merge(spec, typed.get('driver') or {})
        if 'gds' in typed:
            spec = deep_merge(spec, {'gds': typed['gds']})
        spec['nodeSelector'] = pool_selector(pool)
        docs.append({'apiVersion': NVIDIA_DRIVER_API_VERSION, 'kind': NVIDIA_DRIVER_KIND,
                     'metadata': {'name': pool['name'], 'labels': managed_by_labels()},
                     'spec': spec})
    return docs


def _matches(selector, node):
    labels = labels_of(node)
    return selector_matches([(k, 'in', [v]) for k, v in sorted(selector.items())], labels)


def overlap_errors(selectors, nodes, prefix='gpu_operator_driver_pools'):
    """``selectors``: [(owner text, node selector)]. A node selected by two of them gets the driver of
    neither (the operator's node-selector validator refuses both)."""
    errors = []
    for node in nodes or []:
        owners = [owner for owner, selector in selectors if _matches(selector, node)]
        if len(owners) > 1:
            errors.append('%s: node %s is selected by %s; the node selectors of the NVIDIADrivers must not overlap '
                          '(each GPU node gets its driver from exactly one)'
                          % (prefix, name_of(node), ' and '.join(owners)))
    return errors


def spec_schema(crd, version='v1alpha1'):
    """The ``spec`` schema of the served ``version`` of a CRD (or None)."""
    for served in ((crd or {}).get('spec') or {}).get('versions') or []:
        if served.get('served') and served.get('name') == version:
            return (((served.get('schema') or {}).get('openAPIV3Schema') or {}).get('properties') or {}).get('spec')
    return None


def stale_drivers(pools, existing):
    """Names of the NVIDIADrivers gpuops.gpu created (managed-by label) whose pool is no longer in
    ``pools``, sorted; an NVIDIADriver without the label is never one of them."""
    declared = set(p.get('name') for p in pools or [] if isinstance(p, dict))
    metas = [meta_of(d) for d in existing or []]
    return sorted(m.get('name') for m in metas
                  if m.get('name') and m.get('name') not in declared and is_managed(m.get('labels')))


def pool_plan(pools, defaults=None, nodes=None, existing=None, crd=None, prefix='gpu_operator_driver_pools'):
    """``{'documents': [...], 'deletions': [...], 'errors': [...]}`` for the pools. ``nodes``: the nodes
    read; ``existing``: the NVIDIADrivers read; ``crd``: the NVIDIADriver CRD (None: the API is not
    served yet, the schema is checked once the operator is installed). ``deletions``: the names of the
    NVIDIADrivers gpuops.gpu created for pools no longer declared (``stale_drivers``); they no longer
    count in the node-overlap check, since they are deleted before the pools' NVIDIADrivers are written."""
    errors = settings_errors({'pools': pools}, prefix=prefix[:-len('pools')]) if pools else []
    if errors:
        return {'documents': [], 'deletions': [], 'errors': errors}
    docs = pool_documents(pools, defaults)
    deletions = stale_drivers(pools, existing)
    schema = spec_schema(crd)
    by_name = dict((name_of(d), d) for d in existing or [])
    for index, doc in enumerate(docs):
        path = '%s[%d] (%s)' % (prefix, index, doc['metadata']['name'])
        if schema:
            errors.extend(schema_errors(doc['spec'], schema, path + ' spec'))
        errors.extend(driver_rule_errors(doc['spec'], path + ' spec', ()))
        current = (by_name.get(doc['metadata']['name']) or {}).get('spec') or {}
        for field in IMMUTABLE_FIELDS:
            if field in current and field in doc['spec'] and current[field] != doc['spec'][field]:
                errors.append('%s: spec.%s cannot change on an existing NVIDIADriver (it is %r); give the pool a new '
                              'name, or delete the NVIDIADriver first' % (path, field, current[field]))
    names = set(d['metadata']['name'] for d in docs) | set(deletions)
    selectors = [("pool '%s'" % d['metadata']['name'], d['spec']['nodeSelector']) for d in docs]
    selectors += [("NVIDIADriver '%s'" % name, dict((d.get('spec') or {}).get('nodeSelector') or {})
                   or {LABEL_PRESENT: 'true'})
                  for name, d in sorted(by_name.items()) if name not in names]
    errors.extend(overlap_errors(selectors, nodes, prefix))
    return {'documents': docs, 'deletions': deletions, 'errors': errors}
