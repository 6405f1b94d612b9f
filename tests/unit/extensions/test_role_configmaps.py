# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every ConfigMap a role creates carries the collection's managed-by label (common/names.py LABEL_MANAGED_BY,
MANAGED_BY): the roles write only ConfigMaps carrying it (common/ownership.py configmap_write_errors), and so does the
rollout account's ConfigMap admission policy, so a ConfigMap created without it could never be written again."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os

import yaml

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import LABEL_MANAGED_BY, MANAGED_BY

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
BLOCKS = ('block', 'rescue', 'always')
WRITES = ('kubernetes.core.k8s',)


def _tasks(tasks):
    for task in tasks or []:
        yield task
        for key in BLOCKS:
            yield from _tasks(task.get(key))


def configmap_writes():
    """(file, task name, metadata) of every role task that creates or updates a ConfigMap."""
    out = []
    for path in sorted(glob.glob(os.path.join(REPO, 'roles', '*', 'tasks', '*.yml'))):
        with open(path) as handle:
            for task in _tasks(yaml.safe_load(handle)):
                args = next((task[m] for m in WRITES if m in task), None)
                definition = (args or {}).get('definition')
                if isinstance(definition, dict) and definition.get('kind') == 'ConfigMap' \
                        and args.get('state', 'present') == 'present':
                    out.append((os.path.relpath(path, REPO), task['name'], definition.get('metadata') or {}))
    return out


def test_the_rollout_configmaps_are_found():
    found = set((path, name) for path, name, _meta in configmap_writes())
    assert ('roles/mig/tasks/apply.yml', 'apply | Write the custom mig-parted ConfigMap') in found
    assert ('roles/sharing/tasks/apply.yml', 'apply | Write the device-plugin ConfigMap (one key per profile)') in found


def test_every_configmap_a_role_creates_is_labelled_managed_by_gpuops():
    unlabelled = []
    for path, name, meta in configmap_writes():
        labels = meta.get('labels')
        if isinstance(labels, dict):
            ok = labels.get(LABEL_MANAGED_BY) == MANAGED_BY
        else:  # an expression that adds the label to the user's
            ok = isinstance(labels, str) and "'%s': '%s'" % (LABEL_MANAGED_BY, MANAGED_BY) in labels
        if not ok:
            unlabelled.append('%s: %s' % (path, name))
    assert unlabelled == []
