# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixed-width text table of a GPU fleet (the ``nodes``/``summary`` of gpu_nodes_info). Pure.

Used by the ``gpuops.gpu.gpu_fleet_table`` filter, ``playbooks/report.yml``, ``make demo`` and the
HTML/CSV/JSON fleet report (``fleet_report.py``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import type_name
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import RESOURCE_PREFIX

NONE = '-'
UNKNOWN = 'n/a'   # pods were not read (include_pods=false)

SEPARATOR = '  '


def _text(value):
    if value is None or value == '':
        return NONE
    return str(value)


def resource_order(name):
    """Sort key of a GPU resource name: full GPUs, other ``gpu*`` resources, then MIG resources by name."""
    short = short_resource(name)
    return (0 if short == 'gpu' else 1 if short.startswith('gpu') else 2, short)


def short_resource(name):
    """``nvidia.com/mig-1g.5gb`` → ``mig-1g.5gb``."""
    return name[len(RESOURCE_PREFIX):] if name.startswith(RESOURCE_PREFIX) else name


def compact_resources(resources):
    """``{'nvidia.com/gpu': 8, 'nvidia.com/mig-1g.5gb': 14}`` → ``gpu:8 mig-1g.5gb:14``.

    Full GPUs first, then other ``gpu*`` resources, then MIG resources by name. ``-`` when empty.
    """
    if not resources:
        return NONE
    return ' '.join('%s:%s' % (short_resource(name), resources[name])
                    for name in sorted(resources, key=resource_order))


def resources_cell(resources):
    return UNKNOWN if resources is None else compact_resources(resources)


def pods_cell(pods):
    return UNKNOWN if pods is None else str(len(pods))


def mig_cell(node):
    """``strategy/config/state`` (``-`` for a missing part).

    ``-`` when the node shows no MIG at all: GFD labels ``nvidia.com/mig.strategy`` on every GPU
    node, so a GPU that is not MIG-capable with no MIG config or state gets ``-`` too.
    """
    parts = [node.get('mig_strategy'), node.get('mig_config'), node.get('mig_state')]
    if not any(parts) or (node.get('mig_capable') is False and not any(parts[1:])):
        return NONE
    return '/'.join(_text(p) for p in parts)


def sharing_cell(node):
    """``time-slicing/4``, ``mps/10``; ``-`` when unshared."""
    strategy = node.get('sharing_strategy')
    if not strategy or strategy == 'none':
        return NONE
    return '%s/%s' % (strategy, _text(node.get('replicas')))


def dra_kind(device):
    """What a DRA device is in the fleet table: ``gpu``, ``mig-<profile>`` (the device plugin's resource names)."""
    return 'mig-%s' % device.get('profile') if device.get('type') == 'mig' else device.get('type') or 'gpu'


def dra_cell(node):
    """The node's DRA devices, allocated of all, per kind: ``gpu:1/2 mig-1g.5gb:3/7``; ``-`` without any."""
    kinds = {}
    for device in node.get('dra_devices') or []:
        used, total = kinds.get(dra_kind(device), (0, 0))
        kinds[dra_kind(device)] = (used + (1 if device.get('allocated') else 0), total + 1)
    return ' '.join('%s:%d/%d' % ((kind,) + kinds[kind]) for kind in sorted(kinds, key=resource_order)) or NONE


def sharing_words(sharing):
    """A DRA device's ``sharing`` (the driver's GpuConfig ``sharing``) in words: ``TimeSlicing interval=Long``,
    ``MPS defaultActiveThreadPercentage=50``; ``-`` without one."""
    if not isinstance(sharing, dict) or not sharing.get('strategy'):
        return NONE
    settings = []
    for key in sorted(k for k in sharing if k != 'strategy'):
        value = sharing[key] if isinstance(sharing[key], dict) else {key: sharing[key]}
        settings.extend('%s=%s' % (name, value[name]) for name in sorted(value))
    return ' '.join([str(sharing['strategy'])] + settings)


DRA_HEADERS = ('NODE', 'DEVICE', 'TYPE', 'PRODUCT', 'PROFILE', 'MEMORY MIB', 'STATE', 'CLAIMS', 'PODS', 'SHARING')


def dra_rows(nodes):
    """One row of cells per DRA device of the nodes (node order, then device name): the DRA_HEADERS."""
    return [[_text(node.get('name')), _text(d.get('name')), _text(d.get('type')), _text(d.get('product')),
             _text(d.get('profile')), _text(d.get('memory_mib')), 'allocated' if d.get('allocated') else 'free',
             ' '.join(d.get('claims') or []) or NONE, ' '.join(d.get('pods') or []) or NONE,
             sharing_words(d.get('sharing'))]
            for node in nodes for d in node.get('dra_devices') or []]


# (header, cell function of a node dict, right aligned)
COLUMNS = (
    ('NODE', lambda n: _text(n.get('name')), False),
    ('PRODUCT', lambda n: _text(n.get('product')), False),
    ('GPUS', lambda n: _text(n.get('count')), True),
    ('MIG', mig_cell, False),
    ('SHARING', sharing_cell, False),
    ('DRIVER', lambda n: _text(n.get('driver_version')), False),
    ('CUDA', lambda n: _text(n.get('cuda_version')), False),
    ('ALLOCATABLE', lambda n: resources_cell(n.get('allocatable')), False),
    ('REQUESTED', lambda n: resources_cell(n.get('requested')), False),
    ('PODS', lambda n: pods_cell(n.get('gpu_pods')), True),
    ('STACK', lambda n: _text(n.get('stack')), False),
    ('DRA USED/ALL', dra_cell, False),
    ('READY', lambda n: 'no' if n.get('ready') is False else 'yes', False),
    ('CORDONED', lambda n: 'yes' if n.get('unschedulable') else 'no', False),
)


HEADERS = tuple(c[0] for c in COLUMNS)


def table_rows(nodes):
    """The cells of the table, one list of strings per node (CSV and HTML reports use them too)."""
    return [[c[1](node) for c in COLUMNS] for node in nodes]


def _counts(mapping):
    return ', '.join('%s x%s' % (k, mapping[k]) for k in sorted(mapping)) or NONE


def summary_lines(summary):
    """Footer lines for a fleet_summary() dict."""
    nodes = summary.get('nodes', 0)
    gpu_nodes = summary.get('gpu_nodes', nodes)
    head = '%d node%s' % (nodes, '' if nodes == 1 else 's')
    if gpu_nodes != nodes:
        head += ' (%d with GPUs)' % gpu_nodes
    lines = [
        '%s; products: %s' % (head, _counts(summary.get('products') or {})),
        'allocatable: %s; requested: %s; free: %s' % (
            compact_resources(summary.get('allocatable')), resources_cell(summary.get('requested')),
            resources_cell(summary.get('free'))),
        'GPU pods: %s; cordoned: %d; not ready: %d; MIG states: %s; sharing: %s' % (
            UNKNOWN if summary.get('gpu_pods') is None else summary.get('gpu_pods'),
            summary.get('unschedulable', 0), summary.get('not_ready', 0),
            _counts(summary.get('mig_states') or {}), _counts(summary.get('sharing') or {})),
    ]
    if summary.get('stacks') is not None:
        devices = summary.get('dra_devices') or {}
        lines.append('stacks: %s; DRA devices allocated: %s' % (_counts(summary['stacks']), ', '.join(
            '%s %d/%d' % (key, devices[key]['allocated'], devices[key]['total']) for key in sorted(devices)) or NONE))
    return lines


def normalise_input(data, summary=None):
    """Accept the node list, or the whole gpu_nodes_info result (its ``summary`` is used unless
    one is given). Returns ``(nodes, summary)``; raises ValueError on anything else."""
    if isinstance(data, dict):
        if 'nodes' not in data:
            raise ValueError('expected the node list or a gpu_nodes_info result (a dict with "nodes")')
        if summary is None:
            summary = data.get('summary')
        data = data['nodes']
    if not isinstance(data, (list, tuple)):
        raise ValueError('expected a list of nodes, got %s' % type_name(data))
    for item in data:
        if not isinstance(item, dict):
            raise ValueError('every node must be a dict as gpu_nodes_info returns it, got %s'
                             % type_name(item))
    if summary is not None and not isinstance(summary, dict):
        raise ValueError('summary must be a dict, got %s' % type_name(summary))
    return list(data), summary


def render(nodes, summary=None):
    """The table as one string (lines separated by ``\\n``, no trailing spaces)."""
    nodes, summary = normalise_input(nodes, summary)
    headers = HEADERS
    rows = table_rows(nodes)
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells):
        out = []
        for i, cell in enumerate(cells):
            out.append(cell.rjust(widths[i]) if COLUMNS[i][2] else cell.ljust(widths[i]))
        return SEPARATOR.join(out).rstrip()

    lines = [line(headers)]
    lines.extend(line(r) for r in rows)
    if not rows:
        lines.append('(no GPU nodes)')
    if summary:
        lines.append('')
        lines.extend(summary_lines(summary))
    return '\n'.join(lines)
