# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpuops.gpu.mig_rollout through its main(), bad input: every malformed option or assignment is refused
before any write, with a message that names the option and says what to fix, and no two malformed inputs get
the same message. The cluster is the fake of rollout_fakes.py; the inputs whose refusal depends on what a real
cluster holds (nodes, ConfigMaps, cordons) are in tests/integration/test_bad_input.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.modules import mig_rollout
from ansible_collections.gpuops.gpu.tests.unit.plugins.modules.rollout_fakes import (
    assign, check_bad_inputs, check_good_input, over)

MIG = {'assignments': [{'nodes': ['a100-0'], 'config': 'all-1g.5gb'}]}


m = over(MIG)


# case -> (arguments over rollout_fakes.COMMON, the option it gets wrong, other words the message must hold)
CASES = {
    # durations and poll_interval (once accepted: state_timeout 0 cordoned and labelled, poll_interval 0 made
    # thousands of requests, negative timeouts gave misleading errors)
    'state_timeout 0': (m(state_timeout=0), 'state_timeout', ['must be between 1 and 604800 seconds', 'got 0']),
    'state_timeout negative': (m(state_timeout=-5), 'state_timeout', ['must be between 1', 'got -5']),
    'state_timeout huge': (m(state_timeout=10 ** 12), 'state_timeout', ['must be between 1 and 604800']),
    'verify_timeout negative': (m(verify_timeout=-1), 'verify_timeout', ['must be between 1']),
    'drain_timeout negative': (m(drain_timeout=-1), 'drain_timeout', ['must be between 0']),
    'api_timeout negative': (m(api_timeout=-1), 'api_timeout', ['must be between 1']),
    'reboot_timeout negative': (m(reboot_timeout=-1), 'reboot_timeout', ['must be between 1']),
    'grace_period negative': (m(grace_period=-1), 'grace_period', ['must be between 0']),
    'grace_period beyond int64': (m(grace_period=2 ** 64), 'grace_period', ['must be between 0']),
    'poll_interval 0': (m(poll_interval=0), 'poll_interval', ['must be between 0.1 and 300.0 seconds', 'got 0']),
    'poll_interval negative': (m(poll_interval=-1), 'poll_interval', ['must be between 0.1']),
    'poll_interval absurd': (m(poll_interval=1e9), 'poll_interval', ['must be between 0.1']),
    'poll_interval .nan': (m(poll_interval=float('nan')), 'poll_interval', ['must be between 0.1', 'nan']),
    # max_unavailable (checked once the nodes are read: a percentage is of the assigned nodes)
    'max_unavailable negative': (m(max_unavailable=-1), 'max_unavailable', ['must allow at least one node']),
    'max_unavailable 0': (m(max_unavailable=0), 'max_unavailable', ['must allow at least one node']),
    'max_unavailable 101%': (m(max_unavailable='101%'), 'max_unavailable', ['between 1% and 100%']),
    'max_unavailable abc': (m(max_unavailable='abc'), 'max_unavailable',
                            ["a positive integer or a percentage like '25%'"]),
    'max_unavailable 10.5%': (m(max_unavailable='10.5%'), 'max_unavailable',
                              ["a positive integer or a percentage like '25%'"]),
    'max_unavailable list': (m(max_unavailable=[1]), 'max_unavailable', ['a positive integer or a percentage',
                                                                         'list']),
    # digits of other scripts, which Python's int() reads: Arabic-Indic 3 (once a rollout of 3 nodes)
    'max_unavailable Arabic-Indic 3': (m(max_unavailable='\u0663'), 'max_unavailable',
                                       ["got '\u0663': write it with the digits 0-9"]),
    # names (operator_namespace '' was once a raw 400 from the API)
    'operator_namespace empty': (m(operator_namespace=''), 'operator_namespace',
                                 ["operator_namespace '' is not a namespace name", 'e.g. nvidia-gpu-operator']),
    'operator_namespace spaces': (m(operator_namespace='GPU Operator'), 'operator_namespace',
                                  ['is not a namespace name']),
    'operator_namespace unicode': (m(operator_namespace='n\u00e4mespace'), 'operator_namespace',
                                   ['is not a namespace name']),
    'cluster_policy spaces': (m(cluster_policy='My Policy'), 'cluster_policy',
                              ["cluster_policy 'My Policy' is not a Kubernetes object name"]),
    # the GPU operator's own ConfigMaps (once read and rolled out against)
    "config_map the operator's": (m(config_map='default-mig-parted-config'), 'config_map', [
        "config_map: ConfigMap 'default-mig-parted-config' belongs to the GPU operator", 'leave config_map unset']),
    # selectors (once a selector value with a comma became two terms and a pod_selector list was accepted)
    'selector comma': (m(**assign('config', 'all-1g.5gb', selector={'gpuops.dev/pool': 'training,inference'})),
                       'selector.gpuops.dev/pool', ["label_selector 'gpuops.dev/pool in (training,inference)'"]),
    'selector list value': (m(**assign('config', 'all-1g.5gb', selector={'gpuops.dev/pool': ['training']})),
                            'selector.gpuops.dev/pool', ['must be a string, got list']),
    'selector bad key': (m(**assign('config', 'all-1g.5gb', selector={'bad key!': 'x'})), 'selector',
                         ["key 'bad key!'"]),
    'pod_selector list value': (m(pod_selector={'app': ['a', 'b']}), 'pod_selector.app', ['must be a string']),
    'label_selector unparsable': (m(**assign('config', 'all-1g.5gb', label_selector='a==,=')), 'assignments[0]',
                                  ['cannot parse label selector']),
    # assignments (assignments [] was once accepted)
    'assignments empty': (m(assignments=[]), 'assignments', ['assignments is empty: give at least one item']),
    'node named twice': (m(**assign('config', 'all-1g.5gb', nodes=['a100-0', 'a100-0'])), 'assignments[0].nodes',
                         ["node 'a100-0' is named twice", 'name each node once']),
    'nodes and selector missing': (m(assignments=[{'config': 'all-1g.5gb'}]), 'assignments[0]',
                                   ['give nodes or a label_selector/selector']),
    'config with spaces': (m(**assign('config', 'all 1g.5gb', nodes=['a100-0'])), 'assignments[0].config',
                           ["'all 1g.5gb' must be", 'it becomes a node label value']),
    'config unicode': (m(**assign('config', '\u00e4ll-1g', nodes=['a100-0'])), 'assignments[0].config',
                       ['it becomes a node label value']),
    'config ~': (m(**assign('config', '~', nodes=['a100-0'])), 'assignments[0].config', ["'~' must be"]),
    # words YAML reads as a boolean or null are label values, and no MIG config of the node's GPU
    'config yes': (m(**assign('config', 'yes', nodes=['a100-0'])), "config 'yes'", ['is not defined; defined:']),
    'config null string': (m(**assign('config', 'null', nodes=['a100-0'])), "config 'null'",
                           ['is not defined; defined:']),
}

# types and values Ansible's argument spec refuses: its words, each naming the option
ARG_SPEC = {
    'assignments a dict': (m(assignments={'nodes': ['a100-0'], 'config': 'all-1g.5gb'}), 'assignments', ['list']),
    'assignments of lists': (m(assignments=[['a100-0']]), 'assignments', ["sub parameter field 'assignments'"]),
    'config null': (m(assignments=[{'nodes': ['a100-0'], 'config': None}]), 'config', ['assignments']),
    'selector a list': (m(**assign('config', 'all-1g.5gb', selector=['gpuops.dev/pool=training'])), 'selector',
                        ['dict']),
    'state_timeout words': (m(state_timeout='soon'), 'state_timeout', ['int']),
    'state_timeout 1.5': (m(state_timeout=1.5), 'state_timeout', ['int']),
    'mig_strategy double': (m(mig_strategy='double'), 'mig_strategy', ['none, single, mixed']),
    'misspelt option': (m(max_unavailble=2), 'max_unavailble', ['Unsupported parameters']),
}


def test_every_bad_input_is_refused_before_any_write_naming_the_option(run_module):
    check_bad_inputs(run_module, mig_rollout, CASES, ARG_SPEC)


def test_a_good_input_on_the_same_cluster_is_not_refused(run_module):
    check_good_input(run_module, mig_rollout, MIG)
