# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters for air-gapped installs: the mirror plan and the role's input errors, the public-registry check,
pull-secret merge.

Thin wrappers: the logic lives in module_utils.plans.mirror, module_utils.plans.mirror_images,
module_utils.plans.mirror_air_gap and module_utils.common.docker_config.
Documentation is in the sidecar files mirror_plan.yml, mirror_input_errors.yml, mirror_image_variables.yml,
public_registry_references.yml and docker_config_merge.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import filter_errors, plain_filters


def mirror_plan(config, cluster=None):
    """Objects, ClusterPolicy patch, image list and errors for the mirror role."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import mirror as plan_lib
    if not isinstance(config, dict):
        raise AnsibleFilterError('mirror_plan: the input must be a mapping of settings')
    return plan_lib.mirror_plan(config, cluster)


def mirror_input_errors(plan, checks):
    """Every error that stops the mirror role before its first write ([] when none)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import mirror as plan_lib
    if not isinstance(plan, dict) or not isinstance(checks, dict):
        raise AnsibleFilterError('mirror_input_errors: expects the mirror_plan result and a mapping of checks')
    return plan_lib.role_errors(plan, checks)


def mirror_image_variables(roles=None):
    """Names of the role variables holding the collection's images and charts (of ``roles``; all when empty)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import mirror_images
    if roles and not isinstance(roles, (list, tuple)):
        raise AnsibleFilterError('mirror_image_variables: the input must be a list of role names')
    return mirror_images.variable_names(roles or None)


def public_registry_references(objects, mirror=None, public_registries=None):
    """Places in Kubernetes objects that still name a public registry ([] when air-gap clean)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import mirror_air_gap
    if isinstance(objects, dict):
        objects = [objects]
    return mirror_air_gap.public_registry_references(objects, mirror, public_registries)


@filter_errors
def docker_config_merge(existing, credentials):
    """Merge registry credentials into a base64 .dockerconfigjson, keeping every existing entry."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.common import docker_config
    errors = docker_config.credential_errors(credentials)
    if errors:
        raise AnsibleFilterError('docker_config_merge: %s' % '; '.join(errors))
    return docker_config.merge_docker_config(existing or '', credentials)


class FilterModule(object):
    """gpuops.gpu mirror filters."""

    def filters(self):
        return plain_filters({
            'mirror_plan': mirror_plan,
            'mirror_input_errors': mirror_input_errors,
            'mirror_image_variables': mirror_image_variables,
            'public_registry_references': public_registry_references,
            'docker_config_merge': docker_config_merge,
        })
