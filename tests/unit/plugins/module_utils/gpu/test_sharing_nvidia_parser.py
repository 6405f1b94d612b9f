# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The validator and the renderer against NVIDIA's device-plugin parser (api/config/v1).

Every case below is derived from the public source of NVIDIA/k8s-device-plugin v0.20.0
(https://github.com/NVIDIA/k8s-device-plugin/tree/v0.20.0/api/config/v1); the citation next to each
case is ``file:line`` there. The plugin reads the file with sigs.k8s.io/yaml (config.go:27, :123):
go-yaml v2 (YAML 1.1), then encoding/json into the structs. Rules:

1. whatever the plugin refuses at start-up (a crash-looping device plugin on every node of the
   group), the validator refuses, with a message that says what to fix;
2. whatever the plugin reads as "absent", the validator accepts as absent;
3. where the validator is stricter than the plugin, the case is listed with the reason;
4. the rendered ConfigMap reads back, under YAML 1.1, as exactly the strings and numbers we meant.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

import pytest
import yaml

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing import GO_INT_MAX, GO_UINT64_MAX, MAX_REPLICAS
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing_checks import sharing_config_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing_render import render_config, render_profiles

UUID = 'b1028956-cfa2-0990-bf4a-5da9abb51763'


def _res(**resource):
    """A config sharing one resource by time-slicing; ``resource`` overrides name/replicas."""
    entry = {'name': 'nvidia.com/gpu', 'replicas': 4}
    entry.update(resource)
    return {'sharing': {'timeSlicing': {'resources': [entry]}}}


def _block(**block):
    block.setdefault('resources', [{'name': 'nvidia.com/gpu', 'replicas': 4}])
    return {'sharing': {'timeSlicing': block}}


def _without(config, key):
    entry = config['sharing']['timeSlicing']['resources'][0]
    del entry[key]
    return config


# --- 1. what the plugin refuses, the validator refuses --------------------------------------

PLUGIN_REFUSES = [
    # sharing.go:22 TimeSlicing is a struct value with its own UnmarshalJSON, so an explicit null
    # reaches it; replicas.go:190-193 then fails with "no resources specified".
    ('timeSlicing null', {'sharing': {'timeSlicing': None}}, "sharing.timeSlicing is empty (null)"),
    ('timeSlicing empty', {'sharing': {'timeSlicing': {}}}, 'sharing.timeSlicing.resources is required'),
    # replicas.go:190-202: resources missing, null or empty -> "no resources specified".
    ('resources null', _block(resources=None), 'sharing.timeSlicing.resources is required'),
    ('resources empty', _block(resources=[]), 'sharing.timeSlicing.resources must not be empty'),
    # replicas.go:166-175 (mps: same decoder): a block without resources fails even with other keys.
    ('mps without resources', {'sharing': {'mps': {'renameByDefault': True}}}, 'sharing.mps.resources is required'),
    # replicas.go:221-224: a null entry decodes as an empty map -> "no resource name specified".
    ('resource entry null', _block(resources=[None]), 'resources[0] must be a mapping, got null'),
    # replicas.go:226 + resources.go:127-140, :57-61: name null decodes as '' -> 'nvidia.com/' is invalid.
    ('name null', _res(name=None), 'resources[0].name is required'),
    # replicas.go:255-263 + resources.go:127-140: rename null decodes as '' -> invalid resource name.
    ('rename null', _res(rename=None), 'resources[0].rename is empty (null): the device plugin fails to start'),
    ('rename empty', _res(rename=''), 'resources[0].rename must be a resource name'),
    # replicas.go:231-239 passes an explicit null to ReplicatedDevices.UnmarshalJSON, which reads it
    # as the string '' (replicas.go:271-276): "the only valid string input is 'all'".
    ('devices null', _res(devices=None), 'resources[0].devices is empty (null): the device plugin fails to start'),
    ('devices other string', _res(devices='some'), "resources[0].devices must be 'all'"),
    # replicas.go:281-287: a count is a Go int > 0.
    ('devices zero', _res(devices=0), "resources[0].devices must be 'all', a count from 1"),
    ('devices negative', _res(devices=-1), "resources[0].devices must be 'all', a count from 1"),
    ('devices count over int64', _res(devices=GO_INT_MAX + 1), 'a count from 1 to 9223372036854775807'),
    # replicas.go:300-303: an integer index is a uint64; :305-315: strings go through ParseUint
    # (:100-105 GPU index, :108-119 MIG index, :140-163 MIG-GPU-<uuid>/<gi>/<ci>).
    ('index over uint64', _res(devices=[GO_UINT64_MAX + 1]), 'indexes at most 18446744073709551615'),
    ('negative index', _res(devices=[-1]), 'indexes at most'),
    ('string index over uint64', _res(devices=[str(GO_UINT64_MAX + 1)]), 'indexes at most'),
    ('MIG index over uint64', _res(devices=['0:%d' % (GO_UINT64_MAX + 1)]), 'indexes at most'),
    ('MIG UUID index over uint64', _res(devices=['MIG-GPU-%s/%d/0' % (UUID, GO_UINT64_MAX + 1)]), 'indexes at most'),
    ('index not a device', _res(devices=['GPU-x']), 'indexes at most'),
    # replicas.go:241-253: replicas required, decoded into a Go int (replicas.go:85), >= 2.
    ('replicas missing', _without(_res(), 'replicas'), 'resources[0].replicas is required'),
    ('replicas null', _res(replicas=None), 'resources[0].replicas is required'),
    ('replicas 1', _res(replicas=1), 'replicas must be an integer >= 2'),
    ('replicas string', _res(replicas='4'), 'replicas must be an integer >= 2'),
    ('replicas over int64', _res(replicas=GO_INT_MAX + 1), 'is more than %d' % MAX_REPLICAS),
    # replicas.go:178, :184: booleans decode only from JSON booleans.
    ('renameByDefault string', _block(renameByDefault='true'), 'renameByDefault must be true or false'),
    ('failRequestsGreaterThanOne string', _block(failRequestsGreaterThanOne='true'),
     'failRequestsGreaterThanOne must be true or false'),
    # resources.go:53-55: at most 63 characters with the nvidia.com/ prefix.
    ('name too long', _res(name='g' * 53), 'is longer than 63 characters'),
    # duration.go:65-76: time.ParseDuration fails past int64 nanoseconds.
    ('sleepInterval overflows', {'flags': {'gfd': {'sleepInterval': '99999999999h'}}}, 'must be a duration'),
    # imex.go:36 channelIDs is []int; imex.go:45-53 allows only [] or [0].
    ('channelIDs over int64', {'imex': {'channelIDs': [GO_INT_MAX + 1]}}, 'must be [] or [0]'),
    # config.go:128-134: only v1.
    ('version v2', {'version': 'v2'}, 'must be v1'),
]


@pytest.mark.parametrize('config, fragment', [case[1:] for case in PLUGIN_REFUSES],
                         ids=[case[0] for case in PLUGIN_REFUSES])
def test_what_the_plugin_refuses_is_refused(config, fragment):
    errors = sharing_config_errors(config)
    assert errors, 'the device plugin refuses this config at start-up'
    assert any(fragment in error for error in errors), errors


# --- 2. what the plugin reads as absent, the validator accepts as absent --------------------

PLUGIN_ABSENT = [
    # sharing.go:24 MPS is a pointer without a decoder of its own: null leaves it nil, so
    # sharing.go:36-52 use time-slicing (or nothing).
    ('mps null', {'sharing': {'mps': None}}),
    ('mps null next to timeSlicing', {'sharing': {'mps': None, 'timeSlicing': {'resources': [
        {'name': 'nvidia.com/gpu', 'replicas': 4}]}}}),
    # config.go:34-40: struct fields without a decoder of their own; JSON null is a no-op.
    ('top-level nulls', {'version': None, 'flags': None, 'resources': None, 'sharing': None, 'imex': None}),
    # flags.go:59-83, :109-115: every flag is a pointer; null leaves it unset.
    ('flag nulls', {'flags': {'migStrategy': None, 'mpsRoot': None, 'plugin': None, 'gfd': None}}),
    ('nested flag nulls', {'flags': {'plugin': {'deviceListStrategy': None}, 'gfd': {'sleepInterval': None}}}),
    # replicas.go:173-181: renameByDefault null decodes into a bool as a no-op (false);
    # replicas.go:183-188: failRequestsGreaterThanOne null leaves the pointer nil.
    ('block option nulls', _block(renameByDefault=None, failRequestsGreaterThanOne=None)),
    # imex.go:36, :41: a nil slice and a bool no-op.
    ('imex nulls', {'imex': {'channelIDs': None, 'required': None}}),
    # resources.go:42-43: nil lists.
    ('resources lists null', {'resources': {'gpus': None, 'mig': None}}),
]


@pytest.mark.parametrize('config', [case[1] for case in PLUGIN_ABSENT], ids=[case[0] for case in PLUGIN_ABSENT])
def test_what_the_plugin_reads_as_absent_is_accepted(config):
    assert sharing_config_errors(config) == []


# --- integers: every bound is what the Go field takes ---------------------------------------

@pytest.mark.parametrize('config', [
    _res(devices=GO_INT_MAX),                                  # replicas.go:282 Go int
    _res(devices=[GO_UINT64_MAX, 0]),                          # replicas.go:300 uint64
    _res(devices=[str(GO_UINT64_MAX), '0:%d' % GO_UINT64_MAX, 'MIG-GPU-%s/%d/0' % (UUID, GO_UINT64_MAX),
                  'GPU-' + UUID, 'MIG-' + UUID]),              # replicas.go:100-163
    _res(replicas=MAX_REPLICAS),
    {'flags': {'gfd': {'sleepInterval': GO_INT_MAX}}},          # duration.go:54-56 nanoseconds
    {'flags': {'gfd': {'sleepInterval': '2562047h47m16.854775807s'}}},  # the largest time.Duration
    {'flags': {'gfd': {'sleepInterval': '1h30m0.5s'}}},
    {'flags': {'gfd': {'sleepInterval': 'infinite'}}},         # duration.go:66-68
])
def test_bounds_accept_the_largest_values_the_plugin_takes(config):
    assert sharing_config_errors(config) == []


def test_replicas_bound_is_documented_and_explained():
    errors = sharing_config_errors(_res(replicas=MAX_REPLICAS + 1))
    assert errors == ['sharing.timeSlicing.resources[0].replicas %d is more than %d, the most replicas per device '
                      'gpuops.gpu accepts (the device plugin advertises replicas x devices entries to the kubelet); '
                      'lower replicas' % (MAX_REPLICAS + 1, MAX_REPLICAS)]


def test_issue_17_replicas_10_to_the_12_is_refused():
    assert sharing_config_errors(_res(replicas=10 ** 12))


# --- 3. stricter than the plugin, on purpose ------------------------------------------------

STRICTER = [
    # sharing.go:20-25 and config.go:34-40 have no decoder of their own, so encoding/json matches
    # 'timeslicing' to TimeSlicing case-insensitively; with both spellings one silently wins. The
    # blocks below match exactly (replicas.go:173-255). One spelling, NVIDIA's, everywhere.
    ('mis-cased block', {'sharing': {'timeslicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 4}]}}},
     "unknown key 'timeslicing'; did you mean 'timeSlicing'?"),
    ('mis-cased top level', {'Sharing': {}}, "unknown key 'Sharing'; did you mean 'sharing'?"),
    # replicas.go:300-303: a null list item decodes into uint64 as a no-op, i.e. GPU 0.
    ('null device index', _res(devices=[None]), "resources[0].devices must be 'all'"),
    # replicas.go:292-318 accepts an empty list; DisableResourceNamingInConfig then shares all devices.
    ('empty device list', _res(devices=[]), "resources[0].devices must be 'all'"),
    # JSON 4.0 decodes into a Go int as 4; a float in the inventory is more likely a mistake.
    ('float replicas', _res(replicas=4.0), 'replicas must be an integer >= 2'),
    ('replicas over the sane maximum', _res(replicas=MAX_REPLICAS + 1), 'is more than %d' % MAX_REPLICAS),
    # duration.go:65-76: a negative interval parses; GFD would relabel without pause.
    ('negative sleepInterval', {'flags': {'gfd': {'sleepInterval': '-5s'}}}, 'must be a duration'),
    # duration.go:54-56: a number is float64 nanoseconds converted to a time.Duration without a
    # range check, so past int64 it silently becomes a negative interval.
    ('sleepInterval int past int64', {'flags': {'gfd': {'sleepInterval': GO_INT_MAX + 1}}}, 'must be a duration'),
]


@pytest.mark.parametrize('config, fragment', [case[1:] for case in STRICTER], ids=[case[0] for case in STRICTER])
def test_stricter_than_the_plugin(config, fragment):
    errors = sharing_config_errors(config)
    assert any(fragment in error for error in errors), errors


# --- 4. rendering for a YAML 1.1 reader -----------------------------------------------------

# Strings a YAML 1.1 reader turns into something else when they are not quoted: go-yaml v2's
# resolve table (go.yaml.in/yaml/v2 resolve.go:37-48: y/n/on/off/yes/no booleans, ~ and null,
# the << merge key; :151-163: ParseInt/ParseUint with base prefixes 0o/0x/0b and _ separators, and
# floats such as 1e3), plus what PyYAML's YAML 1.1 resolver reads as non-strings (timestamps,
# sexagesimal numbers, .inf/.nan) and strings YAML syntax would break.
YAML_SPECIAL = ['y', 'Y', 'n', 'N', 'yes', 'No', 'on', 'Off', 'ON', 'true', 'False', 'null', 'Null', '~', '',
                '<<', '=', '0o17', '017', '0x1F', '0b101', '1e3', '1E3', '+1', '-1', '1_000', '1.5', '.5', '.inf',
                '-.Inf', '.NaN', '2001-12-14', '12:30:45', '190:20:30', '- x', 'a: b', '#x', '@x', '`x', '%x',
                '!x', '&x', '*x', '|', '>', '[x]', '{x}', "it's", '"q"', ' lead', 'trail ', 'multi\nline', 'tab\tx',
                'ünïcødé', '\u2028']

# Plain (unquoted) values the renderer may emit: integers, booleans and null only.
_PLAIN_VALUE_RE = re.compile(r'^(-?[0-9]+|true|false|null)$')


def _scalars(node, key=False):
    """(is_key, ScalarNode) for every scalar of a composed YAML document."""
    if isinstance(node, yaml.ScalarNode):
        yield key, node
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _scalars(item)
    elif isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            yield from _scalars(key_node, key=True)
            yield from _scalars(value_node)


def _assert_no_plain_string(text):
    for is_key, node in _scalars(yaml.compose(text)):
        if node.style:
            continue
        if is_key:
            assert re.match(r'^[A-Za-z][A-Za-z0-9]*$', node.value) and node.value.lower() not in (
                'y', 'n', 'yes', 'no', 'on', 'off', 'true', 'false', 'null'), node.value
        else:
            assert _PLAIN_VALUE_RE.match(node.value), 'plain string value %r in\n%s' % (node.value, text)


def test_pyyaml_alone_would_leave_go_yaml_specials_plain():
    """Why the renderer quotes: PyYAML's own dumper emits these plain, and go-yaml v2 reads them as
    a boolean (resolve.go:37) and numbers (resolve.go:151, :163)."""
    assert yaml.safe_dump({'a': 'y', 'b': '0o17', 'c': '1e3'}) == 'a: y\nb: 0o17\nc: 1e3\n'


@pytest.mark.parametrize('special', YAML_SPECIAL)
def test_special_strings_round_trip_quoted(special):
    config = {'flags': {'mpsRoot': special, 'nvidiaDriverRoot': special, 'gfd': {'outputFile': special}},
              'resources': {'gpus': [{'pattern': special, 'name': 'nvidia.com/gpu'}]}}
    text = render_config(config)
    assert yaml.safe_load(text) == dict(config, version='v1')
    _assert_no_plain_string(text)


def test_validated_profiles_round_trip_strings_and_numbers():
    # '017' is GPU 17 to the plugin (replicas.go:101 ParseUint base 10) only when it arrives as a
    # string: plain, go-yaml v2 reads 017 as octal 15 (resolve.go:151 ParseInt base 0).
    plugin = {'deviceListStrategy': ['envvar'], 'cdiAnnotationPrefix': '1e3'}
    profiles = {'ts': {'flags': {'migStrategy': 'none', 'mpsRoot': 'on', 'plugin': plugin},
                       'sharing': {'timeSlicing': {'renameByDefault': False, 'resources': [
                           {'name': 'nvidia.com/gpu', 'replicas': MAX_REPLICAS,
                            'devices': [GO_UINT64_MAX, '017', '0:1']}]}}},
                'count': _res(devices=GO_INT_MAX)}
    for name, text in render_profiles(profiles).items():
        assert yaml.safe_load(text) == dict(profiles[name], version='v1')
        _assert_no_plain_string(text)


def test_unusual_keys_are_quoted():
    text = render_config({'flags': {'y': 1, 'on': 2, 'odd key': 3, '0o17': 4}})
    assert yaml.safe_load(text) == {'version': 'v1', 'flags': {'y': 1, 'on': 2, 'odd key': 3, '0o17': 4}}
    _assert_no_plain_string(text)
    assert "  'y': 1\n" in text and "  'on': 2\n" in text
