# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The feature gates each release of NVIDIA's DRA driver for GPUs knows. Pure, no I/O.

Read from kubernetes-sigs/dra-driver-nvidia-gpu ``pkg/featuregates/featuregates.go`` at each release tag
(docs/facts.md, "NVIDIA's DRA driver chart"). The driver parses ``FEATURE_GATES`` with k8s.io/component-base's
feature gate, which refuses a name it does not know, so the kubelet plugin would not start. Besides its own gates
it registers Kubernetes' logging gates. Releases were named by date up to v25.12 and by semantic version from
v0.4 on (25.3 = 0.1, 25.8 = 0.2, 25.12 = 0.3); v25.3 has no gates of its own (its chart has no ``featureGates``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra import FEATURE_GATES
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra_config import enabled_gates

# k8s.io/component-base logs/api/v1: registered by every release that has gates (logsapi.AddFeatureGates)
LOGGING_GATES = ('ContextualLogging', 'LoggingAlphaOptions', 'LoggingBetaOptions')
_V25_8 = ('TimeSlicingSettings', 'MPSSupport', 'IMEXDaemonsWithDNSNames')
_V25_12 = _V25_8 + ('PassthroughSupport', 'NVMLDeviceHealthCheck', 'DynamicMIG', 'ComputeDomainCliques',
                    'CrashOnNVLinkFabricErrors')
_V0_4 = _V25_12 + ('DeviceMetadata',)
# semantic minor -> (the release line as NVIDIA names it, its own gates); newer than the table: main's gates
RELEASES = {1: ('v25.3', ()), 2: ('v25.8', _V25_8), 3: ('v25.12', _V25_12), 4: ('v0.4', _V0_4)}
NEWEST = ('newer than v0.4 (main)', tuple(FEATURE_GATES))
_VERSION_RE = re.compile(r'^v?(\d+)\.(\d+)(?:[.+-]|$)', re.ASCII)


def release_minor(version):
    """The driver release's semantic minor (25.8 -> 2, 0.4.1 -> 4, 26.4 -> 4), or None when unreadable."""
    match = _VERSION_RE.match(version) if isinstance(version, str) else None
    if not match:
        return None
    major, minor = int(match.group(1)), int(match.group(2))
    if major == 0:
        return minor if minor >= 1 else None
    if major == 25:
        return 1 if minor < 8 else (2 if minor < 12 else 3)
    return 4 if (major, minor) == (26, 4) else None


def release_gates(version):
    """``(release, gates)`` for a driver version ('v25.12.0', '0.4.1'): the release line and every gate name it
    accepts (its own and the logging gates; none for v25.3). An empty or unreadable version, or one newer than
    the table, gets main's gates."""
    minor = release_minor(version)
    if minor is None or minor not in RELEASES:
        release, own = NEWEST
    else:
        release, own = RELEASES[minor]
    return release, (tuple(own) + LOGGING_GATES if own else ())


def gate_mapping(gates):
    """``(mapping, enabled, errors)`` from dra_driver_feature_gates, a list of names or a {name: bool} mapping: the
    chart's/GPUCluster's ``featureGates`` mapping (a list turns each name on; a mapping keeps gates turned off), the
    set of names turned on, and the input errors."""
    enabled, errors = enabled_gates(gates)
    if isinstance(gates, dict):
        return dict((k, v) for k, v in gates.items() if isinstance(v, bool)), enabled, errors
    return dict((k, True) for k in sorted(enabled)), enabled, errors
