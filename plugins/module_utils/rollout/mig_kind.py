# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a MIG rollout wants from one node, decided from the node dict alone (pure, no I/O).

The rollout engine (rollout/engine.py) asks a *target kind* four questions: is the node already there, which
label patch moves it, how far it has got, and what allocatable to expect at the end. This is the
MIG answer (labels and states: docs/facts.md#mig-manager); sharing has its own.

The allocatable to expect is the node's whole state: the MIG devices of the target config
(gpu/mig_configs.py ``config_capacity``) multiplied by the device-plugin sharing profile the node
runs (its ``nvidia.com/device-plugin.config`` label, else the ClusterPolicy default; read the way
the sharing kind reads it, rollout/sharing_kind.py ``effective_key``), through
gpu/sharing_render.py ``sharing_capacity``. The MIG manager restarts the device plugin after a
change, so the plugin runs the profile's current ConfigMap text afterwards.

On a node that NVIDIA's DRA driver serves (a cutover moved it: rollout/stack_kind.py) no extended resource is
advertised; the MIG manager still applies the layout, and the driver's ResourceSlice follows it. There the MIG
change is done when the slice lists exactly the config's devices (whole GPUs and MIG devices by profile), read
through ``slices_of`` (node name -> the driver's current slices of the node), and no allocatable is expected.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import is_ascii_digits
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import ANN_PHYSICAL_GPUS
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import annotations_of, labels_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra_fleet import attribute
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.products import get_product
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.geometry import MigGeometryError
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_configs import config_capacity
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing import sharing_strategy
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import Memo
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.stack_kind import DRA, current_stack

STATE_SUCCESS = 'success'
STATE_FAILED = 'failed'
STATE_PENDING = 'pending'
STATE_REBOOTING = 'rebooting'


class MigKind(object):
    """MIG configuration through the ``nvidia.com/mig.config`` label.

    ``document`` is the mig-parted document the operator's MIG manager reads, or None for the
    operator's built-in configs. ``strategy`` is the ClusterPolicy ``mig.strategy``. ``sharing`` is a
    rollout.sharing_kind.SharingKind over the device-plugin ConfigMap the ClusterPolicy names
    (``devicePlugin.config``), or None when it names none (no node is shared).

    ``document`` and ``overrides`` are fixed for the kind's life: the catalog entry of a product and
    the capacity of a config (which validates the whole document) are computed once per distinct
    product and (config, product, GPU count, strategy), not once per node (``capacity``).
    """

    label = gn.LABEL_MIG_CONFIG
    name = 'mig'

    def __init__(self, document, strategy, overrides=None, sharing=None, slices_of=None):
        self.document = document
        self.strategy = strategy
        self.overrides = overrides
        self.sharing = sharing
        self.slices_of = slices_of
        self.memo = Memo()

    # ------------------------------------------------------------------ memoized catalog answers
    def capacity(self, config_name, product, gpus, strategy):
        """gpu/mig_configs.py ``config_capacity`` over this kind's document and overrides (a fresh dict),
        computed once per distinct (config, product, GPU count, strategy); raises its MigGeometryError."""
        return self.memo.get(('capacity', config_name, product, gpus, strategy), config_capacity, self.document,
                             config_name, product, gpus, strategy, self.overrides)

    def catalog_entry(self, product):
        """gpu/products.py ``get_product`` with this kind's overrides, once per product (None: unknown)."""
        return self.memo.get(('product', product), get_product, product, self.overrides)

    # ------------------------------------------------------------------ node facts
    labels = staticmethod(labels_of)  # the node's labels

    def product(self, node):
        return gn.base_product(self.labels(node).get(gn.LABEL_PRODUCT))

    def physical_gpus(self, node):
        """Physical GPUs on the node. In MIG single strategy GFD counts MIG devices, so divide by
        the instances per GPU of the config that is applied; remembered in an annotation."""
        ann = annotations_of(node)
        if is_ascii_digits(ann.get(ANN_PHYSICAL_GPUS)):
            return int(ann[ANN_PHYSICAL_GPUS])
        labels = self.labels(node)
        try:
            count = int(labels.get(gn.LABEL_COUNT, ''))
        except ValueError:
            return None
        product_label = labels.get(gn.LABEL_PRODUCT, '')
        current = labels.get(gn.LABEL_MIG_CONFIG)
        if '-MIG-' not in product_label or not current:
            return count
        try:
            per_gpu = sum(self.capacity(current, self.product(node), 1, 'mixed').values())
        except MigGeometryError:
            return None
        return count // per_gpu if per_gpu else None

    # ------------------------------------------------------------------ engine questions
    def validate(self, node, value):
        """Reasons why ``value`` cannot be applied to ``node`` (empty list when it can)."""
        name = node['metadata']['name']
        product = self.product(node)
        if not product:
            return ["node %s has no %s label: GPU feature discovery has not labelled it yet (is the GPU operator "
                    "ready on it?)" % (name, gn.LABEL_PRODUCT)]
        entry = self.catalog_entry(product)
        if entry is None:
            return ["node %s: GPU product '%s' is not in the MIG catalog; describe it with mig_catalog_overrides"
                    % (name, product)]
        if not entry['mig_capable'] and value != 'all-disabled':
            return ["node %s: %s is not MIG capable; only 'all-disabled' can be applied" % (name, product)]
        gpus = self.physical_gpus(node)
        if not gpus:
            return ["node %s: cannot tell how many GPUs it has (label %s)" % (name, gn.LABEL_COUNT)]
        try:
            self.capacity(value, product, gpus, self.strategy)
        except MigGeometryError as exc:
            return ["node %s (%d x %s, mig strategy %s): %s" % (name, gpus, product, self.strategy, exc)]
        return [] if on_dra(node) else self.sharing_errors(node, value, gpus)

    # ------------------------------------------------------------------ the sharing half of the node's state
    def sharing_profile(self, node):
        """(key, config) of the device-plugin profile the node runs: its label, else the default;
        ('', {}) without a device-plugin ConfigMap or profile; config None when the key is not in the
        ConfigMap or is not valid YAML."""
        if self.sharing is None:
            return '', {}
        key = self.sharing.effective_key(node)
        return key, self.sharing.config(key)

    def enables_mig(self, node, value, gpus):
        """``value`` leaves MIG enabled on some GPU of the node (fewer full GPUs than GPUs with strategy mixed)."""
        full = self.capacity(value, self.product(node), gpus, 'mixed')
        return full.get(gn.GPU_RESOURCE, 0) < gpus

    def sharing_errors(self, node, value, gpus):
        """Why the node's sharing profile keeps ``value`` from working (empty list when it does not)."""
        key, config = self.sharing_profile(node)
        where = "node %s runs device-plugin profile '%s'" % (node['metadata']['name'], key)
        if config is None:
            return ["%s, which is not a key of the device-plugin ConfigMap (or not valid YAML): its device plugin "
                    "cannot start, so no MIG change can be verified; fix its sharing first "
                    "(gpuops.gpu.sharing_rollout)" % where]
        if sharing_strategy(config) == 'mps' and self.enables_mig(node, value, gpus):
            return ['%s (MPS), and config \'%s\' enables MIG: the device plugin fails with "sharing using MPS is not '
                    'supported for MIG devices"; give the node an unshared or time-slicing profile first '
                    '(gpuops.gpu.sharing_rollout)' % (where, value)]
        try:
            self.expected_allocatable(node, value)
        except ValueError as exc:
            return ['%s, which does not work with MIG strategy %s: %s; fix the profile first' % (where, self.strategy, exc)]
        return []

    def at_target(self, node, value):
        labels = self.labels(node)
        return labels.get(gn.LABEL_MIG_CONFIG) == value and labels.get(gn.LABEL_MIG_STATE) == STATE_SUCCESS

    def needs_label(self, node, value):
        """A patch is needed unless the label already asks for ``value`` and the MIG manager has not
        given up on it (re-setting the same value does nothing: it has to be cycled)."""
        labels = self.labels(node)
        return labels.get(gn.LABEL_MIG_CONFIG) != value or labels.get(gn.LABEL_MIG_STATE) == STATE_FAILED

    def label_patch(self, value):
        """Set the config and clear the old state in ONE patch, so a stale ``success`` can never be
        read as the result of this change."""
        return {gn.LABEL_MIG_CONFIG: value, gn.LABEL_MIG_STATE: None}

    def clear_patch(self):
        return {gn.LABEL_MIG_CONFIG: None, gn.LABEL_MIG_STATE: None}

    def progress(self, node, value):
        """('done'|'wait'|'failed'|'rebooting', detail) for a node whose label was set to value."""
        labels = self.labels(node)
        if labels.get(gn.LABEL_MIG_CONFIG) != value:
            return 'failed', ("label %s was changed to '%s' by someone else during the rollout"
                              % (gn.LABEL_MIG_CONFIG, labels.get(gn.LABEL_MIG_CONFIG)))
        state = labels.get(gn.LABEL_MIG_STATE)
        if state == STATE_FAILED:
            return 'failed', ("the MIG manager reported %s=failed for config '%s' (see the nvidia-mig-manager pod "
                              "log on the node)" % (gn.LABEL_MIG_STATE, value))
        if state == STATE_REBOOTING:
            return 'rebooting', 'node is rebooting to change the MIG mode'
        if state == STATE_SUCCESS:
            paused = [k for k, v in labels.items()
                      if k.startswith(gn.DEPLOY_LABEL_PREFIX) and v == gn.PAUSED_FOR_MIG]
            if paused:
                return 'wait', 'success, but %s still %s' % (', '.join(sorted(paused)), gn.PAUSED_FOR_MIG)
            if on_dra(node) and self.slices_of is not None:
                want = self.dra_devices(node, value)
                have = published(self.slices_of(node['metadata']['name']))
                if have != want:
                    return 'wait', 'success, but the ResourceSlice of %s lists %s, not %s' % (
                        dra.DRIVER, _words(have), _words(want))
                return 'done', 'success, the ResourceSlice of %s lists %s' % (dra.DRIVER, _words(want))
            return 'done', 'success'
        return 'wait', 'state %s' % (state or 'not reported yet')

    def dra_devices(self, node, value):
        """{'gpu' or a MIG profile: count}: the devices NVIDIA's DRA driver publishes for ``value`` (one per GPU
        with MIG disabled, its MIG devices by profile otherwise)."""
        devices = self.capacity(value, self.product(node), self.physical_gpus(node), 'mixed')
        return dict(('gpu' if key == gn.GPU_RESOURCE else key[len(gn.MIG_RESOURCE_PREFIX):], count)
                    for key, count in devices.items() if count)

    def expected_allocatable(self, node, value):
        """The MIG devices of ``value`` as the node's sharing profile advertises them (none on a DRA node)."""
        if on_dra(node):
            return {}
        devices = self.capacity(value, self.product(node), self.physical_gpus(node), self.strategy)
        key, config = self.sharing_profile(node)
        if not config:
            return devices
        mig = dict((k, v) for k, v in devices.items() if k != gn.GPU_RESOURCE)
        return self.sharing.profile_capacity(key, devices.get(gn.GPU_RESOURCE, 0), self.strategy,
                                             mig if self.strategy == 'mixed' else None)


def on_dra(node):
    """NVIDIA's DRA driver serves the node's GPUs, not the device plugin (the cutover's labels)."""
    return current_stack(node) == DRA


def published(slices):
    """{'gpu' or a MIG profile: count} of the devices the driver's slices list."""
    out = {}
    for item in slices or []:
        for device in (item.get('spec') or {}).get('devices') or []:
            key = attribute(device, 'profile') if attribute(device, 'type') == 'mig' else 'gpu'
            out[key] = out.get(key, 0) + 1
    return out


def _words(devices):
    return ', '.join('%d %s' % (count, key) for key, count in sorted(devices.items())) or 'no device'
