# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpuops.gpu.sharing_rollout through its main(), bad input: every malformed option, assignment or inline
profile is refused before any write, with a message that names the option and says what to fix, and no two
malformed inputs get the same message. The cluster is the fake of rollout_fakes.py; the inputs whose refusal
depends on what a real cluster holds (nodes, the device-plugin ConfigMap, cordons) are in
tests/integration/test_bad_input.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.modules import sharing_rollout
from ansible_collections.gpuops.gpu.tests.unit.plugins.modules.rollout_fakes import (
    CM, assign, check_bad_inputs, check_good_input, over, ts)

SHARING = {'assignments': [{'nodes': ['l40s-0'], 'profile': 'ts'}]}


s = over(SHARING)


# case -> (arguments over rollout_fakes.COMMON, the option it gets wrong, other words the message must hold)
CASES = {
    'state_timeout 0': (s(state_timeout=0), 'state_timeout', ['must be between 1', 'got 0']),
    'verify_timeout negative': (s(verify_timeout=-1), 'verify_timeout', ['must be between 1']),
    'verify_timeout huge': (s(verify_timeout=10 ** 15), 'verify_timeout', ['must be between 1']),
    'drain_timeout negative': (s(drain_timeout=-30), 'drain_timeout', ['must be between 0', 'got -30']),
    'api_timeout 0': (s(api_timeout=0), 'api_timeout', ['must be between 1']),
    'poll_interval 0': (s(poll_interval=0), 'poll_interval', ['must be between 0.1', 'got 0']),
    'poll_interval a day': (s(poll_interval=86400), 'poll_interval', ['must be between 0.1']),
    'max_unavailable 0%': (s(max_unavailable='0%'), 'max_unavailable', ['between 1% and 100%']),
    'max_unavailable yes': (s(max_unavailable=True), 'max_unavailable', ['a positive integer or a percentage',
                                                                         'boolean']),
    'max_unavailable 1.5': (s(max_unavailable=1.5), 'max_unavailable', ['a positive integer or a percentage',
                                                                        'float']),
    # digits of other scripts, which Python's int() reads: full-width 2
    'max_unavailable full-width 2%': (s(max_unavailable='\uff12%'), 'max_unavailable',
                                      ["got '\uff12%': write it with the digits 0-9"]),
    'operator_namespace empty': (s(operator_namespace=''), 'operator_namespace', ['is not a namespace']),
    'config_map spaces': (s(config_map='device plugin'), 'config_map',
                          ["config_map 'device plugin' is not a Kubernetes"]),
    # the GPU operator's own ConfigMaps (once read and rolled out against)
    'config_map an entrypoint': (s(config_map='nvidia-device-plugin-entrypoint'), 'config_map', [
        "ConfigMap 'nvidia-device-plugin-entrypoint' belongs to the GPU operator (the entrypoint script"]),
    'selector comma': (s(**assign('profile', 'ts', selector={'gpuops.dev/pool': 'inference,x'})),
                       'selector.gpuops.dev/pool', ['one value per key']),
    'pod_selector comma': (s(pod_selector={'app': 'a,b'}), 'pod_selector.app', ['one value per key']),
    'restart_pod_selector': (s(restart_pod_selector='app in ('), 'restart_pod_selector', ['cannot parse']),
    'assignments empty': (s(assignments=[]), 'assignments', ['assignments is empty']),
    'node named twice': (s(assignments=[{'nodes': ['l40s-0'], 'profile': 'ts'}, {'nodes': ['l40s-0'], 'profile': 'ts'}]),
                         'assignments[1].nodes', ["node 'l40s-0' is named twice (assignments[0].nodes and"]),
    'profile with spaces': (s(**assign('profile', 'time sliced', nodes=['l40s-0'])), 'assignments[0].profile',
                            ["'time sliced' must be"]),
    # inline profiles (once replicas 10^12 relabelled nodes)
    'inline replicas 10^12': (s(config_map=CM, profiles={'ts': ts(10 ** 12)}), 'replicas', ['is more than 256']),
    'inline profile reserved': (s(config_map=CM, profiles={'none': {}}), "profile name 'none'", ['is reserved']),
}

# types Ansible's argument spec refuses: its words, each naming the option
ARG_SPEC = {
    'drain maybe': (s(drain='maybe'), 'drain', ['bool']),
    'pod_selector a list': (s(pod_selector=['app=a']), 'pod_selector', ['dict']),
}


def test_every_bad_input_is_refused_before_any_write_naming_the_option(run_module):
    check_bad_inputs(run_module, sharing_rollout, CASES, ARG_SPEC)


def test_a_good_input_on_the_same_cluster_is_not_refused(run_module):
    check_good_input(run_module, sharing_rollout, SHARING)
