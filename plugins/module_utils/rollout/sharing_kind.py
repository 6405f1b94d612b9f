# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a GPU sharing rollout wants from one node, decided from the node dict alone (pure, no I/O).

The sharing *kind* for engine.NodeRollout (see mig_kind.MigKind for the MIG one). A node
runs the device-plugin config picked by its ``nvidia.com/device-plugin.config`` label from the
ConfigMap named by ClusterPolicy ``devicePlugin.config.name``. With no label the config-manager
sidecar falls back to ``devicePlugin.config.default``, and with no default to NO config file
(the operator sets ``FALLBACK_STRATEGIES=empty``: k8s-device-plugin cmd/config-manager/main.go
``updateConfigName``; gpu-operator controllers/object_controls.go ``handleDevicePluginConfig``),
which means no sharing.

Assignment values:
- a profile name (a ConfigMap key): the label is set to it;
- ``default``: the label is removed, the node follows ``devicePlugin.config.default``;
- ``none`` (or empty): the node must not be shared. The label is removed when that falls back to
  an unshared config (no default, or an unshared default), else it is set to an unshared profile
  (``unshared_key``). A node already labelled with an unshared profile keeps its label.

Neither the operator nor the config-manager watches the ConfigMap CONTENT: a changed profile is
only read when the plugin pods restart. The content hash the node last ran with is kept in the
``gpuops.gpu/device-plugin-config-hash`` annotation; when it differs from the target's, the
rollout deletes the device-plugin pods on the node (``restart``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import ANN_DP_CONFIG_HASH, RESTARTED_OPERANDS
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import annotations_of, labels_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import sharing as sc
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing_checks import sharing_config_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing_render import expected_labels, sharing_capacity
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.products import get_product
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import Memo

NONE = 'none'
DEFAULT = 'default'
RESERVED = (NONE, DEFAULT)
ANN_HASH = ANN_DP_CONFIG_HASH
RESTART_SELECTOR = 'app in (%s)' % ','.join(RESTARTED_OPERANDS)
MIG_BUSY_STATES = ('pending', 'rebooting', 'failed')


def content_hash(text):
    """The hash recorded for a config's text ('' when the node runs without a config file)."""
    if text is None:
        return ''
    return hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]


def normalise_value(value):
    """'' and None mean unshared."""
    if value is None or (isinstance(value, str) and value.strip() == ''):
        return NONE
    return value


def _int(value, default=None):
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return default


class SharingKind(object):
    """GPU sharing through the ``nvidia.com/device-plugin.config`` label.

    ``texts``: {profile key: YAML text} of the device-plugin ConfigMap (what the plugin reads);
    ``configs``: the same parsed ({key: dict}, None for a key that is not valid YAML);
    ``default_key``: ClusterPolicy ``devicePlugin.config.default`` ('' when unset);
    ``mig_strategy``: ClusterPolicy ``mig.strategy``; ``configured``: a ConfigMap is named at all;
    ``unshared_key``: the profile set for ``none`` when the default shares GPUs.

    The profiles and the overrides are fixed for the kind's life: a profile's checks, content hash,
    GFD labels and capacity are computed once per distinct (profile, product, GPU count, strategy)
    through ``memo`` (rollout/inputs.py ``Memo``), not once per node.
    """

    label = gn.LABEL_DP_CONFIG
    name = 'sharing'
    cycle_same_value = False  # the config-manager acts on the value; re-setting it changes nothing

    def __init__(self, texts, configs, default_key, mig_strategy, namespace, configured=True,
                 unshared_key=None, restart_selector=RESTART_SELECTOR, overrides=None):
        self.texts = texts
        self.configs = configs
        self.default_key = default_key or ''
        self.mig_strategy = mig_strategy
        self.namespace = namespace
        self.configured = configured
        self.unshared_key = unshared_key
        self.restart_selector = restart_selector
        self.overrides = overrides
        self.warnings = []
        self.strict_strategy = True  # False: a node still on another MIG strategy is a warning (plans)
        self._physical = {}
        self.memo = Memo()

    # ------------------------------------------------------------------ profiles
    labels = staticmethod(labels_of)  # the node's labels

    def config(self, key):
        """The config for a key ('' = no config file = {}); None when unknown or unreadable."""
        if not key:
            return {}
        return self.configs.get(key)

    def shares(self, key):
        config = self.config(key)
        return isinstance(config, dict) and sc.sharing_strategy(config) != 'none'

    def is_unshared_key(self, key):
        config = self.config(key)
        return isinstance(config, dict) and sc.sharing_strategy(config) == 'none'

    def default_shares(self):
        return bool(self.default_key) and self.shares(self.default_key)

    def _current(self, node):
        return self.labels(node).get(self.label) or None

    def effective_key(self, node):
        """The profile the config-manager picks for the node now: label, else the default."""
        return self._current(node) or self.default_key

    def desired_label(self, node, value):
        """The label value (None = no label) that makes the node run ``value``."""
        value = normalise_value(value)
        if value == DEFAULT:
            return None
        if value == NONE:
            current = self._current(node)
            if current and self.is_unshared_key(current):
                return current
            return self.unshared_key if self.default_shares() else None
        return value

    def target_key(self, node, value):
        """The profile the node runs once at ``value`` ('' = no config file)."""
        return self.desired_label(node, value) or self.default_key

    def target_hash(self, node, value):
        key = self.target_key(node, value)
        return self.memo.get(('hash', key), content_hash, self.texts.get(key)) if key else ''

    def profile_capacity(self, key, gpus, strategy, mig_resources=None):
        """gpu/sharing_render.py ``sharing_capacity`` of profile ``key``, once per distinct input."""
        mig = None if mig_resources is None else tuple(sorted(mig_resources.items()))
        return self.memo.get(('capacity', key, gpus, strategy, mig), self._capacity, key, gpus, strategy,
                             mig_resources)

    def _capacity(self, key, gpus, strategy, mig_resources):
        return sharing_capacity(self.config(key) or {}, gpus=gpus, strategy=strategy, mig_resources=mig_resources)

    # ------------------------------------------------------------------ node facts
    def product(self, node):
        return gn.base_product(self.labels(node).get(gn.LABEL_PRODUCT))

    def compute_capability(self, node):
        product = self.product(node)
        entry = self.memo.get(('product', product), get_product, product, self.overrides) if product else None
        if entry and entry.get('compute_capability'):
            return entry['compute_capability']
        labels = self.labels(node)
        major, minor = labels.get('nvidia.com/gpu.compute.major'), labels.get('nvidia.com/gpu.compute.minor')
        if _int(major) is not None:
            return '%d.%d' % (_int(major), _int(minor, 0))
        return None

    def strategy_lags(self, node):
        """GFD on the node still reports another MIG strategy than the ClusterPolicy's."""
        reported = self.labels(node).get(gn.LABEL_MIG_STRATEGY)
        return bool(reported) and reported != self.mig_strategy

    @staticmethod
    def mig_enabled(node):
        labels = SharingKind.labels(node)
        config = labels.get(gn.LABEL_MIG_CONFIG)
        return bool(gn.mig_devices(labels)) or bool(config and config != 'all-disabled')

    def physical(self, node):
        """(gpus, mig_resources): devices before sharing, as sharing_config.sharing_capacity wants them.

        GFD's ``.count`` labels are physical counts; with MIG strategy mixed the full GPUs (those
        advertised as nvidia.com/gpu) are the advertised capacity divided by the replicas label.
        Read once per node (before the change) and remembered for the rest of the run.
        """
        name = node['metadata']['name']
        if name in self._physical:
            return self._physical[name]
        labels = self.labels(node)
        count = _int(labels.get(gn.LABEL_COUNT), 0)
        mig = {}
        gpus = count
        if self.mig_strategy == 'mixed':
            for key, value in labels.items():
                if key.startswith(gn.MIG_RESOURCE_PREFIX) and key.endswith('.count') and _int(value, 0):
                    mig[key[:-len('.count')]] = _int(value, 0)
            if mig:
                capacity = gn.gpu_resources((node.get('status') or {}).get('capacity'))
                advertised = capacity.get(gn.GPU_RESOURCE, 0) + capacity.get(gn.SHARED_RESOURCE, 0)
                replicas = _int(labels.get(gn.LABEL_REPLICAS), 1) or 1
                gpus = advertised // replicas
        elif (labels.get(gn.LABEL_PRODUCT) or '').endswith('-MIG-INVALID'):
            gpus = 0
        self._physical[name] = (gpus, mig)
        return gpus, mig

    # ------------------------------------------------------------------ validation
    def validate(self, node, value):
        """Reasons why ``value`` cannot be applied to ``node`` (empty list when it can)."""
        value = normalise_value(value)
        name = node['metadata']['name']
        labels = self.labels(node)
        if not self.product(node) or _int(labels.get(gn.LABEL_COUNT)) is None:
            return ["node %s has no %s/%s labels: GPU feature discovery has not labelled it (is it a GPU node, "
                    "is the GPU operator ready on it?)" % (name, gn.LABEL_PRODUCT, gn.LABEL_COUNT)]
        errors = []
        state = labels.get(gn.LABEL_MIG_STATE)
        if labels.get(gn.LABEL_MIG_CONFIG) and state in MIG_BUSY_STATES:
            errors.append("node %s: MIG reconfiguration to '%s' is %s; finish it first (gpuops.gpu.mig_rollout)"
                          % (name, labels.get(gn.LABEL_MIG_CONFIG), state))
        if self.strategy_lags(node):
            message = ('node %s still reports MIG strategy %s but the ClusterPolicy says %s; wait until the '
                       'device plugin and GFD have restarted with it'
                       % (name, labels.get(gn.LABEL_MIG_STRATEGY), self.mig_strategy))
            if self.strict_strategy:
                errors.append(message)
            else:
                self.warnings.append(message + ' (the plan assumes %s)' % self.mig_strategy)
        if value not in RESERVED and not self.configured:
            return errors + ["node %s: profile '%s' needs the device-plugin ConfigMap, but the ClusterPolicy has no "
                             "devicePlugin.config.name (the gpuops.gpu.sharing role sets it)" % (name, value)]
        if value not in RESERVED and value not in self.configs:
            return errors + ["node %s: profile '%s' is not a key of the device-plugin ConfigMap (profiles: %s)"
                             % (name, value, ', '.join(sorted(self.configs)) or 'none')]
        if value == NONE and self.desired_label(node, value) is None and self.default_shares():
            return errors + ["node %s must be unshared, but the default profile '%s' shares GPUs, so removing the "
                             "label would share it: add an unshared profile (e.g. unshared: {version: v1}) or "
                             "set unshared_profile" % (name, self.default_key)]
        key = self.target_key(node, value)
        if key and key not in self.configs:
            return errors + ["node %s falls back to the default profile '%s', which is not a key of the "
                             "device-plugin ConfigMap (the device plugin would fail to start)" % (name, key)]
        config = self.config(key)
        if config is None:
            return errors + ["node %s: profile '%s' is not valid YAML" % (name, key)]
        where = "node %s (%s, MIG strategy %s), profile '%s'" % (
            name, self.product(node), self.mig_strategy, key or '<none>')
        capability = self.compute_capability(node)
        errors.extend('%s: %s' % (where, e) for e in self.memo.get(
            ('errors', key, self.mig_strategy, capability), sharing_config_errors, config, self.mig_strategy,
            capability))
        if sc.sharing_strategy(config) == 'mps' and self.mig_enabled(node):
            errors.append('%s: MPS cannot share a node with MIG enabled (the device plugin fails with "sharing using '
                          'MPS is not supported for MIG devices"); disable MIG on it or use time-slicing' % where)
        if errors:
            return errors
        gpus, mig = self.physical(node)
        for resource in sorted(self.memo.get(('replicas', key), sc.replicas_by_resource, config)):
            has = gpus if resource == gn.GPU_RESOURCE else mig.get(resource, 0)
            if not has:
                self.warnings.append("%s shares %s, which the node does not advertise: nothing is shared there"
                                     % (where, resource))
        return errors

    # ------------------------------------------------------------------ engine questions
    def needs_label(self, node, value):
        return self._current(node) != self.desired_label(node, value)

    def label_patch(self, value):
        value = normalise_value(value)
        if value == DEFAULT:
            return {self.label: None}
        if value == NONE:
            return {self.label: self.unshared_key if self.default_shares() else None}
        return {self.label: value}

    def clear_patch(self):
        return {self.label: None}

    def restart(self, node, value):
        """Pods to restart when the node's plugin runs other content than the target's."""
        target = self.target_hash(node, value)
        ann = annotations_of(node)
        if ann.get(ANN_HASH, '') == target:
            return None
        return {'namespace': self.namespace, 'selector': self.restart_selector,
                'annotations': {ANN_HASH: target or None}}

    def expected_labels(self, node, value):
        """GFD's replicas and sharing-strategy labels for each shared-or-not resource of the node."""
        key = self.target_key(node, value)
        gpus, mig = self.physical(node)
        product = self.product(node) or 'unknown'
        out = {}
        resources = ([gn.GPU_RESOURCE] if gpus else []) + sorted(mig)
        for resource in resources:
            count = gpus if resource == gn.GPU_RESOURCE else mig[resource]
            labels = self.memo.get(('labels', key, product, count, resource, self.mig_strategy), self._labels, key,
                                   product, count, resource)
            for suffix in ('.replicas', '.sharing-strategy'):
                out[resource + suffix] = labels[resource + suffix]
        return out

    def _labels(self, key, product, count, resource):
        return expected_labels(self.config(key) or {}, product, count, resource=resource,
                               mig_strategy=self.mig_strategy)

    def progress(self, node, value):
        """('done'|'wait'|'failed', detail) for a node whose label was set for ``value``."""
        if self.needs_label(node, value):
            return 'failed', ("label %s was changed to '%s' by someone else during the rollout"
                              % (self.label, self._current(node)))
        labels = self.labels(node)
        expected = self.expected_labels(node, value)
        wrong = ['%s=%s (want %s)' % (k, labels.get(k), v) for k, v in sorted(expected.items()) if labels.get(k) != v]
        if wrong:
            return 'wait', 'GPU feature discovery labels: ' + ', '.join(wrong)
        return 'done', ', '.join('%s=%s' % kv for kv in sorted(expected.items())) or 'no GPU resources'

    def expected_allocatable(self, node, value):
        gpus, mig = self.physical(node)
        return self.profile_capacity(self.target_key(node, value), gpus, self.mig_strategy,
                                     mig if self.mig_strategy == 'mixed' else None)

    def at_target(self, node, value):
        if self.needs_label(node, value) or self.restart(node, value) is not None:
            return False
        if self.progress(node, value)[0] != 'done':
            return False
        actual = gn.gpu_resources((node.get('status') or {}).get('allocatable'))
        expected = self.expected_allocatable(node, value)
        return dict((k, v) for k, v in actual.items() if v) == dict((k, v) for k, v in expected.items() if v)

    def describe(self, node, value):
        """Extra check-mode plan fields."""
        return {
            'label_from': self._current(node), 'label_to': self.desired_label(node, value),
            'profile': self.target_key(node, value) or None,
            'restart_device_plugin': self.restart(node, value) is not None,
            'allocatable': gn.gpu_resources((node.get('status') or {}).get('allocatable')),
            'expected_allocatable': self.expected_allocatable(node, value),
        }
