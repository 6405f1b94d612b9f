# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OLM objects and nodes as the upgrade role reads them, shared by the tests of plans/upgrade.py and the
upgrade filters."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.plans import upgrade


OLD = 'gpu-operator-certified.v25.10.1'


MID = 'gpu-operator-certified.v26.3.3'


NEW = 'gpu-operator-certified.v26.7.0'


NS = 'nvidia-gpu-operator'


NOW = 1800000000.0


def sub(installed=OLD, approval='Manual'):
    return {'metadata': {'name': 'gpu-operator-certified', 'namespace': NS},
            'spec': {'name': 'gpu-operator-certified', 'channel': 'stable', 'source': 'certified-operators',
                     'sourceNamespace': 'openshift-marketplace', 'installPlanApproval': approval,
                     'startingCSV': OLD},
            'status': {'installedCSV': installed, 'currentCSV': NEW, 'state': 'UpgradePending'}}


def csv(name=OLD, phase='Succeeded', version=None, reason=''):
    return {'metadata': {'name': name}, 'spec': {'version': version or upgrade.csv_version_of(name)},
            'status': {'phase': phase, 'reason': reason}}


def plan(name, csvs, approved=False, phase='RequiresApproval'):
    return {'metadata': {'name': name, 'ownerReferences': [{'kind': 'Subscription', 'name': 'gpu-operator-certified'}]},
            'spec': {'approval': 'Manual', 'approved': approved, 'clusterServiceVersionNames': csvs},
            'status': {'phase': phase}}


def manifest(entries=(OLD, MID, NEW)):
    return {'metadata': {'name': 'gpu-operator-certified', 'labels': {'catalog': 'certified-operators'}},
            'status': {'packageName': 'gpu-operator-certified', 'defaultChannel': 'stable', 'catalogSource':
                       'certified-operators', 'channels': [{'name': 'stable', 'currentCSV': entries[-1], 'entries': [
                           {'name': e, 'version': upgrade.csv_version_of(e)} for e in reversed(entries)]}]}}


READY = {'cluster_policy': {'metadata': {'name': 'gpu-cluster-policy'}, 'status': {'state': 'ready'}},
         'name': 'gpu-cluster-policy', 'state': 'ready', 'errors': []}


def node(name, annotations=None, labels=None):
    return {'metadata': {'name': name, 'annotations': annotations or {}, 'labels': labels or {}}}
