#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

# DOCUMENTATION, EXAMPLES and RETURN are in the sidecar gpu_smoke_test.yml.

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.smoke_dra import run
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import GPU_TOLERATION
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.smoke import GROUP_BY
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.smoke_dra import MODES


def main():
    run_module(gpu_module(argument_spec=argument_spec(
        nodes=dict(type='list', elements='dict', required=True),
        mode=dict(type='str', default='device-plugin', choices=list(MODES)),
        device_classes=dict(type='list', elements='str', default=[]),
        claim_templates=dict(type='list', elements='str', default=[]),
        extended_resources=dict(type='bool', default=True),
        namespace=dict(type='str', default='gpuops-smoke-test'),
        image=dict(type='str', default='nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04'),
        image_pull_policy=dict(type='str', default='IfNotPresent', choices=['Always', 'IfNotPresent', 'Never']),
        image_pull_secrets=dict(type='list', elements='str', default=[], no_log=False),
        command=dict(type='list', elements='str', default=[]),
        args=dict(type='list', elements='str', default=[]),
        resources=dict(type='list', elements='str', default=[]),
        exclude_resources=dict(type='list', elements='str', default=[]),
        group_by=dict(type='str', default='product', choices=list(GROUP_BY)),
        tolerations=dict(type='list', elements='dict', default=[GPU_TOLERATION]),
        node_selector=dict(type='dict', default={}),
        security_context=dict(type='dict'),
        wait_for=dict(type='str', default='completion', choices=['completion', 'running']),
        timeout=dict(type='int', default=300),
        stuck_timeout=dict(type='int', default=60),
        poll_interval=dict(type='float', default=2.0),
        expect_output=dict(type='str', default=''),
        log_lines=dict(type='int', default=20),
        accept_unread_logs=dict(type='bool', default=False),
        cleanup=dict(type='bool', default=True),
        fill=dict(type='bool', default=False),
        fill_extra=dict(type='int', default=1),
        fill_command=dict(type='list', elements='str', default=['sleep', '3600']),
        load=dict(type='dict', options=dict(
            image=dict(type='str', required=True),
            command=dict(type='list', elements='str', default=[]),
            args=dict(type='list', elements='str', default=[]),
            duration=dict(type='int', default=60),
            resources=dict(type='list', elements='str', default=['nvidia.com/gpu']),
        )),
        fail_on_error=dict(type='bool', default=True),
        fail_on_no_capacity=dict(type='bool', default=False),
    )), run, lazy=True)


if __name__ == '__main__':
    main()
