# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared inputs of the mirror plan tests: a mirror, a CSV shaped like NVIDIA's bundle, a ClusterPolicy."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

MIRROR = 'mirror.example.com:8443'
DIGEST = 'sha256:' + 'cd' * 32
PEM = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n'
RULES = [{'source': 'nvcr.io/nvidia', 'mirror': MIRROR + '/nvidia'}]

# A CSV shaped like NVIDIA's bundle (install.spec.deployments env + relatedImages), small.
CSV = {
    'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'ClusterServiceVersion',
    'metadata': {'name': 'gpu-operator-certified.v25.10.1'},
    'spec': {
        'relatedImages': [{'name': 'driver-image', 'image': 'nvcr.io/nvidia/driver@' + DIGEST},
                          {'name': 'gpu-operator-image', 'image': 'nvcr.io/nvidia/gpu-operator:v25.10.1'}],
        'install': {'strategy': 'deployment', 'spec': {'deployments': [{'name': 'gpu-operator', 'spec': {
            'template': {'spec': {'containers': [{
                'name': 'gpu-operator', 'image': 'nvcr.io/nvidia/gpu-operator:v25.10.1',
                'env': [{'name': 'OPERATOR_NAMESPACE', 'valueFrom': {'fieldRef': {'fieldPath': 'x'}}},
                        {'name': 'DRIVER_IMAGE', 'value': 'nvcr.io/nvidia/driver@' + DIGEST},
                        {'name': 'DRIVER_IMAGE-570', 'value': 'nvcr.io/nvidia/driver@sha256:' + 'ef' * 32},
                        {'name': 'DEVICE_PLUGIN_IMAGE', 'value': 'nvcr.io/nvidia/k8s-device-plugin@' + DIGEST},
                        {'name': 'VALIDATOR_IMAGE', 'value': 'nvcr.io/nvidia/gpu-operator:v25.10.1'}]}]}}}}]}},
    },
}
POLICY = {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': {'name': 'gpu-cluster-policy'},
          'spec': {'driver': {'enabled': True, 'licensingConfig': {'nlsEnabled': True}},
                   'devicePlugin': {'enabled': True}, 'validator': {'plugin': {'env': []}},
                   'vgpuManager': {'enabled': False}, 'gds': {'enabled': False}}}


def openshift(**extra):
    config = {'platform': 'openshift', 'registry': MIRROR,
              'repositories': ['nvcr.io/nvidia', 'registry.redhat.io'], 'openshift_version': '4.18'}
    config.update(extra)
    return config


def kinds(plan):
    return [(o['kind'], o['metadata']['name']) for o in plan['objects']]
