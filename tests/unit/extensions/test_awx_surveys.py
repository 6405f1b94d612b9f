# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Safe surveys (extensions/awx/job_templates.yml): launching a job template with its survey defaults changes
nothing the role's defaults would not change. The defaults go through the role's meta/argument_specs.yml with
ansible's own ArgumentSpecValidator (what the role's argument validation runs), then, where a role has a planner
that runs without a cluster, through that planner on an already-configured fleet: the plan must be empty."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import math
import os
import re

import jinja2
import pytest
import yaml

from ansible_collections.gpuops.gpu.tests.unit.extensions.awx_files import load_awx

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpuops.gpu.plugins.filter.reset import FilterModule as ResetFilters
from ansible_collections.gpuops.gpu.plugins.module_utils.common.selector import parse_selector, selector_matches
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.batches import parse_max_unavailable

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
AWX = os.path.join(REPO, 'extensions', 'awx')


def _yaml(*parts):
    with open(os.path.join(REPO, *parts)) as handle:
        return load_awx(handle)


TEMPLATES = _yaml('extensions', 'awx', 'job_templates.yml')['controller_templates']
SETTINGS = _yaml('extensions', 'awx', 'settings.yml')
SURVEYED = [t for t in TEMPLATES if t.get('survey_enabled') and (t.get('survey_spec') or {}).get('spec')]
ROLLOUT_PLAYBOOKS = ('playbooks/mig.yml', 'playbooks/mig_from_demand.yml', 'playbooks/sharing.yml', 'playbooks/reset.yml',
                     'playbooks/site.yml', 'playbooks/dra.yml')
# role -> the prefix of its node rollout's variables (<prefix>_max_unavailable, _drain_timeout, _state_timeout, ...)
ROLLOUT_PREFIX = {'mig': 'mig', 'sharing': 'sharing', 'reset': 'reset', 'dra': 'dra_cutover'}

# A survey default that stands for the role's default where AWX cannot offer that value: a multiplechoice
# question has no empty choice, so "keep" is the role's documented synonym of "" (leave it as it is).
KEEP = {'mig_strategy': ('keep', '')}


def _role_specs():
    """{role: options of its main entry point}."""
    out = {}
    for path in sorted(glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'argument_specs.yml'))):
        role = path.split(os.sep)[-3]
        with open(path) as handle:
            out[role] = yaml.safe_load(handle)['argument_specs']['main']['options']
    return out


ROLE_SPECS = _role_specs()
ROLE_OF = dict((var, role) for role, options in ROLE_SPECS.items() for var in options)


def _playbook_defaults():
    """Variables a playbook reads itself, with the default it gives them (``| default(x)``)."""
    out = {}
    for path in glob.glob(os.path.join(REPO, 'playbooks', '*.yml')):
        with open(path) as handle:
            text = handle.read()
        for name, default in re.findall(r'\{\{ *(gpuops_\w+) *\| *default\(([^)]*)\)', text):
            out[name] = yaml.safe_load(default) if default != 'omit' else ''
    return out


PLAYBOOK_DEFAULTS = _playbook_defaults()


def survey_answers(template):
    """The extra vars AWX sends when a template is launched with every survey default (strings stay strings,
    integer questions become ints)."""
    out = {}
    for question in template['survey_spec']['spec']:
        default = question.get('default')
        if default is None:
            continue
        out[question['variable']] = int(default) if question['type'] == 'integer' else default
    return out


def validated(role, params):
    """``params`` through the role's argument spec (ansible's ArgumentSpecValidator, as the role's own
    validation runs it): the validated parameters, every option the role has filled in."""
    result = ArgumentSpecValidator(ROLE_SPECS[role]).validate(dict(params))
    assert not result.error_messages, '%s rejects %s: %s' % (role, params, result.error_messages)
    return result.validated_parameters


def _same(variable, value, role_value):
    """``value`` (survey) has the effect of ``role_value`` (role default)."""
    if variable in KEEP and value == KEEP[variable][0]:
        return role_value == KEEP[variable][1]
    if variable.endswith('_max_unavailable'):
        return all(parse_max_unavailable(value, n) == parse_max_unavailable(role_value, n) for n in (1, 3, 20, 200))
    return value == role_value


@pytest.mark.parametrize('template', SURVEYED, ids=[t['name'] for t in SURVEYED])
def test_survey_defaults_are_the_role_defaults(template):
    """Each role's survey defaults pass its argument spec and equal its defaults (or their "keep" synonym)."""
    answers = survey_answers(template)
    by_role = {}
    for variable, value in answers.items():
        if variable in PLAYBOOK_DEFAULTS and variable not in ROLE_OF:
            assert str(value).lower() == str(PLAYBOOK_DEFAULTS[variable]).lower(), \
                '%s: survey default %s=%r, the playbook defaults it to %r' % (
                    template['name'], variable, value, PLAYBOOK_DEFAULTS[variable])
            continue
        assert variable in ROLE_OF, '%s: %s is no role or playbook variable' % (template['name'], variable)
        by_role.setdefault(ROLE_OF[variable], {})[variable] = value
    for role, params in by_role.items():
        with_survey, role_defaults = validated(role, params), validated(role, {})
        for variable in params:
            assert _same(variable, with_survey[variable], role_defaults[variable]), (
                '%s: launching with the survey default %s=%r changes what the %s role defaults to (%r)'
                % (template['name'], variable, with_survey[variable], role, role_defaults[variable]))


def test_the_check_above_can_fail():
    """The old mig survey (strategy "mixed") sets the ClusterPolicy's strategy, the role's default keeps it."""
    spec = ROLE_SPECS['mig']
    assert not _same('mig_strategy', validated('mig', {'mig_strategy': 'mixed'})['mig_strategy'],
                     spec['mig_strategy']['default'])
    assert not _same('mig_max_unavailable', '10%', spec['mig_max_unavailable']['default'])
    assert _same('mig_strategy', 'keep', spec['mig_strategy']['default'])


@pytest.mark.parametrize('role', sorted(ROLLOUT_PREFIX))
def test_max_unavailable_takes_a_count_or_a_percentage(role):
    variable = '%s_max_unavailable' % ROLLOUT_PREFIX[role]
    questions = [q for t in SURVEYED for q in t['survey_spec']['spec'] if q['variable'] == variable]
    assert questions, 'no survey asks for %s' % variable
    for question in questions:
        # AWX's integer questions refuse "10%": a text question, which the role checks before any write
        assert question['type'] == 'text', '%s must be a text question (a count or a percentage)' % variable
        assert question['min'] >= 1 and question['max'] >= len('100%')
        assert isinstance(question['default'], str)
    assert ROLE_SPECS[role][variable]['type'] == 'raw', '%s must take an int or a string' % variable
    for answer, expected in (('1', 1), ('3', 3), ('10%', 20), ('100%', 200), (' 5 % ', 10), (2, 2)):
        value = validated(role, {variable: answer})[variable]
        assert parse_max_unavailable(value, 200 if '%' in str(answer) else 20) == expected, answer
    for bad in ('', '0', '0%', '150%', 'ten', '-1', '1.5'):
        value = validated(role, {variable: bad})[variable]  # the spec takes raw values; the rollout refuses
        with pytest.raises(ValueError):
            parse_max_unavailable(value, 20)


def _render(value, settings):
    return jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(value).render(settings)


def _expected_timeout(settings):
    batches = math.ceil(int(settings['gpuops_awx_rollout_nodes']) / int(settings['gpuops_awx_rollout_max_unavailable']))
    return batches * int(settings['gpuops_awx_rollout_batch_seconds']) + int(settings['gpuops_awx_rollout_margin_seconds'])


@pytest.mark.parametrize('overrides, expected', [
    ({}, 20 * 1200 + 900),
    ({'gpuops_awx_rollout_nodes': 200, 'gpuops_awx_rollout_max_unavailable': 20}, 10 * 1200 + 900),
    ({'gpuops_awx_rollout_nodes': '201', 'gpuops_awx_rollout_max_unavailable': '20'}, 11 * 1200 + 900),
])
def test_rollout_timeout_follows_fleet_size_and_batches(overrides, expected):
    settings = dict(SETTINGS, **overrides)
    rollouts = [t for t in TEMPLATES if t['playbook'] in ROLLOUT_PLAYBOOKS]
    assert len(rollouts) == len(ROLLOUT_PLAYBOOKS)
    for template in rollouts:
        timeout = int(_render(str(template['timeout']), settings))
        assert timeout == _expected_timeout(settings) == expected, template['name']
        assert template.get('ask_timeout_on_launch') is True, '%s: a larger launch must be able to raise it' % (
            template['name'])
    for template in TEMPLATES:
        if template not in rollouts:
            assert isinstance(template['timeout'], int) and template['timeout'] > 0, template['name']


def test_rollout_timeout_defaults_cover_the_roles_timeouts():
    """One batch in the formula is at least each rollout role's drain + state + verify timeouts (the survey's
    drain timeout default included), so the job is never cut off while a role would still finish."""
    per_batch = int(SETTINGS['gpuops_awx_rollout_batch_seconds'])
    drains = dict((q['variable'], q['default']) for t in SURVEYED for q in t['survey_spec']['spec']
                  if q['variable'].endswith('_drain_timeout'))
    for role, prefix in sorted(ROLLOUT_PREFIX.items()):
        defaults = validated(role, {})
        drain = max(defaults['%s_drain_timeout' % prefix], drains.get('%s_drain_timeout' % prefix, 0))
        # the DRA cutover has no verify step of its own: the state timeout covers the other stack serving the node
        worst = drain + defaults['%s_state_timeout' % prefix] + defaults.get('%s_verify_timeout' % prefix, 0)
        assert per_batch >= worst, 'gpuops_awx_rollout_batch_seconds %d < %s worst batch %d' % (per_batch, role, worst)
        assert int(SETTINGS['gpuops_awx_rollout_margin_seconds']) >= defaults['%s_lock_timeout' % prefix]
    assert int(SETTINGS['gpuops_awx_rollout_max_unavailable']) == int(validated('mig', {})['mig_max_unavailable'])


# ------------------------------------------------------------------------------ plans from the survey defaults

def _template(playbook):
    return next(t for t in TEMPLATES if t['playbook'] == playbook)


def _role_vars(role, answers):
    """What the role's tasks see: defaults, the survey answers, then the role's vars/main.yml (ansible's own
    loader and templar, so the expressions are the role's)."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    loader = DataLoader()
    variables = dict(validated(role, answers))
    role_vars = os.path.join(REPO, 'roles', role, 'vars', 'main.yml')
    if os.path.exists(role_vars):
        variables.update(_load_trusted(loader, role_vars))
    return loader, Templar(loader=loader, variables=variables)


def _load_trusted(loader, path):
    """A role file as ansible loads it: its expressions are templates (ansible-core 2.19 marks them trusted)."""
    try:
        return loader.load_from_file(path, trusted_as_template=True)
    except TypeError:  # ansible-core before 2.19 templates every string
        return loader.load_from_file(path)


def _mig_policy_patch(answers):
    """The ClusterPolicy patch the mig role writes for ``answers``: its task writes __mig_policy_patch, the
    gpuops.gpu.mig_policy_patch filter over __mig_policy_settings (the role's own expressions)."""
    from ansible_collections.gpuops.gpu.plugins.filter.mig_document import mig_policy_patch
    loader, templar = _role_vars('mig', answers)
    tasks = _load_trusted(loader, os.path.join(REPO, 'roles', 'mig', 'tasks', 'apply.yml'))
    task = next(t for t in tasks if t['name'].startswith('apply | Point the ClusterPolicy'))
    assert task['gpuops.gpu.cluster_policy']['overrides'] == '{{ __mig_policy_patch }}'
    role_vars = _load_trusted(loader, os.path.join(REPO, 'roles', 'mig', 'vars', 'main.yml'))
    assert role_vars['__mig_policy_patch'] == '{{ __mig_policy_settings | gpuops.gpu.mig_policy_patch }}'
    return mig_policy_patch(templar.template(role_vars['__mig_policy_settings']))


def test_mig_survey_defaults_patch_nothing_in_the_cluster_policy():
    answers = survey_answers(_template('playbooks/mig.yml'))
    assert _mig_policy_patch(answers) in ({}, '{}', ''), 'the mig survey defaults patch the ClusterPolicy'
    # the check can fail: a strategy the user picks is written
    assert _mig_policy_patch(dict(answers, mig_strategy='mixed')) == {'mig': {'strategy': 'mixed'}}


def _gpu_node(name, labels, annotations=None):
    base = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB',
            'nvidia.com/gpu.replicas': '1', 'nvidia.com/gpu.sharing-strategy': 'none'}
    base.update(labels)
    return {'metadata': {'name': name, 'labels': base, 'annotations': annotations or {}}, 'spec': {},
            'status': {'allocatable': {'nvidia.com/gpu': '8'}}}


def test_mig_survey_defaults_plan_no_node_on_a_configured_fleet():
    """The rollout engine's planner (no cluster needed) with the survey's max_unavailable: nodes already at their
    assigned MIG config are not touched; one that is not is planned (so the check can fail)."""
    pytest.importorskip('kubernetes')
    from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.engine import NodeRollout
    from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.mig_kind import MigKind
    answers = survey_answers(_template('playbooks/mig.yml'))
    params = validated('mig', answers)
    done = {'nvidia.com/mig.config': 'all-1g.5gb', 'nvidia.com/mig.config.state': 'success'}
    nodes = dict(('a100-%d' % i, _gpu_node('a100-%d' % i, done)) for i in range(4))
    assignments = dict((name, 'all-1g.5gb') for name in nodes)
    engine = NodeRollout(None, MigKind({}, 'mixed'), {'max_unavailable': params['mig_max_unavailable']})
    work, batches = engine.plan(assignments, nodes)
    assert (work, batches) == ({}, []), 'a configured fleet is planned: %s %s' % (work, batches)
    nodes['a100-3'] = _gpu_node('a100-3', {'nvidia.com/mig.config': 'all-disabled',
                                           'nvidia.com/mig.config.state': 'success'})
    work, batches = engine.plan(assignments, nodes)
    assert work == {'a100-3': 'all-1g.5gb'} and batches == [['a100-3']]


def test_reset_survey_defaults_plan_nothing_on_a_reset_fleet():
    """The reset role's planner (gpu_reset_plan, the filter its tasks call) with the survey defaults on a fleet
    already at the reset's goal (MIG disabled, unshared, no custom configs): nothing to do."""
    answers = survey_answers(_template('playbooks/reset.yml'))
    params = validated('reset', answers)
    disabled = {'nvidia.com/mig.config': 'all-disabled', 'nvidia.com/mig.config.state': 'success'}
    nodes = [_gpu_node('a100-0', disabled), _gpu_node('a100-1', disabled), _gpu_node('l40s-0', {}),
             {'metadata': {'name': 'cpu-0', 'labels': {}}, 'spec': {}}]
    policy = {'metadata': {'name': 'gpu-cluster-policy'}, 'spec': {'migManager': {'enabled': True}, 'devicePlugin': {}}}
    requirements = parse_selector(params['reset_node_selector'])
    scope = [n['metadata']['name'] for n in nodes if selector_matches(requirements, n['metadata']['labels'])]
    assert scope == ['a100-0', 'a100-1', 'l40s-0']

    def plan(fleet):
        return ResetFilters().filters()['gpu_reset_plan'](
            fleet, [policy], config_maps=[], scope=params['reset_nodes'] or scope, wanted=params['reset_nodes'],
            mig=params['reset_mig'], sharing=params['reset_sharing'], cluster_policy=params['reset_cluster_policy'],
            config_maps_delete=params['reset_config_maps'])

    out = plan(nodes)
    assert out['errors'] == []
    for key in ('mig_nodes', 'sharing_nodes', 'label_cleanup', 'config_maps_delete'):
        assert out[key] == [], '%s: %s' % (key, out[key])
    assert not out['run_sharing'] and out['policy_patch'] == {} and out['default_patch'] == {}
    # the check can fail: a node left in MIG mode is planned
    out = plan([_gpu_node('a100-0', {'nvidia.com/mig.config': 'all-1g.5gb',
                                     'nvidia.com/mig.config.state': 'success'})] + nodes[1:])
    assert out['mig_nodes'] == ['a100-0']


# ------------------------------------------------------------------------------ sharing: the same as mig

def _sharing_writes(answers):
    """The sharing role's tasks that would write (ConfigMap, ClusterPolicy, rollout), as their ``when`` decides
    with ``answers``: the node groups come from the role's own expression (vars/main.yml), on the role's defaults."""
    loader, templar = _role_vars('sharing', answers)
    tasks = _load_trusted(loader, os.path.join(REPO, 'roles', 'sharing', 'tasks', 'apply.yml'))
    return [t['name'] for t in tasks if templar.evaluate_conditional(t['when'])]


def test_sharing_survey_defaults_write_nothing():
    """Launched with its survey defaults (no profiles, no node groups as launch variables), the sharing role
    writes no ConfigMap, no ClusterPolicy and rolls nothing out, as with the role's defaults."""
    answers = survey_answers(_template('playbooks/sharing.yml'))
    assert _sharing_writes(answers) == [] == _sharing_writes({})
    # the check can fail: a default profile (a survey default that shares every GPU node) rolls out
    rollout = 'apply | Roll the sharing profiles out to the node groups'
    assert _sharing_writes(dict(answers, sharing_default_profile='ts4')) == [rollout]


TS4 = {'ts4': {'version': 'v1', 'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 4}]}}}}


def _sharing_node(name, profile, content_hash):
    """An A100 node of 8 GPUs already running ``profile`` (4 time-slices each): the label, the content hash the
    rollout records, GPU feature discovery's labels and the allocatable count the device plugin advertises."""
    node = _gpu_node(name, {'nvidia.com/device-plugin.config': profile, 'nvidia.com/gpu.count': '8',
                            'nvidia.com/gpu.replicas': '4', 'nvidia.com/gpu.sharing-strategy': 'time-slicing',
                            'nvidia.com/mig.strategy': 'single'},
                     {'gpuops.gpu/device-plugin-config-hash': content_hash})
    node['status']['allocatable'] = {'nvidia.com/gpu': '32'}
    return node


def test_sharing_survey_defaults_plan_no_node_on_a_configured_fleet():
    """The rollout engine's planner (no cluster needed) with the survey's max_unavailable and the profiles the
    role writes (its own sharing_profiles_data filter): nodes already running their profile are not touched; one
    whose profile content changed is planned (so the check can fail)."""
    pytest.importorskip('kubernetes')
    from ansible_collections.gpuops.gpu.plugins.filter.sharing import sharing_profiles_data
    from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.engine import NodeRollout
    from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.sharing import parse_texts
    from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.sharing_kind import SharingKind, content_hash
    answers = survey_answers(_template('playbooks/sharing.yml'))
    params = validated('sharing', dict(answers, sharing_profiles=TS4))
    texts = sharing_profiles_data(params['sharing_profiles'], 'single')
    kind = SharingKind(texts, parse_texts(texts), params['sharing_default_profile'], 'single',
                       params['sharing_operator_namespace'])
    nodes = dict(('a100-%d' % i, _sharing_node('a100-%d' % i, 'ts4', content_hash(texts['ts4']))) for i in range(4))
    assignments = dict((name, 'ts4') for name in nodes)
    engine = NodeRollout(None, kind, {'max_unavailable': params['sharing_max_unavailable']})
    assert engine.plan(assignments, nodes) == ({}, []), 'a configured fleet is planned'
    nodes['a100-3'] = _sharing_node('a100-3', 'ts4', content_hash('an older ts4 profile'))
    assert engine.plan(assignments, nodes) == ({'a100-3': 'ts4'}, [['a100-3']])


def test_sharing_cluster_policy_patch_changes_nothing_on_a_configured_cluster():
    """The ClusterPolicy patch the sharing role sends (its task's own expression) merged into a ClusterPolicy it
    already configured leaves it as it is."""
    answers = survey_answers(_template('playbooks/sharing.yml'))
    loader, templar = _role_vars('sharing', dict(answers, sharing_profiles=TS4))
    tasks = _load_trusted(loader, os.path.join(REPO, 'roles', 'sharing', 'tasks', 'apply.yml'))
    task = next(t for t in tasks if t['name'].startswith('apply | Point the ClusterPolicy'))
    patch = templar.template(task['gpuops.gpu.cluster_policy']['overrides'])['devicePlugin']
    configured = {'enabled': True, 'config': {'name': 'gpuops-device-plugin-config', 'default': ''}}
    assert patch['config']['name'] == validated('sharing', answers)['sharing_config_map_name']
    assert _merge(configured, patch) == configured
    assert _merge({'enabled': True}, patch) != {'enabled': True}, 'the check can fail: an unconfigured policy'


def _merge(target, patch):
    """A JSON merge patch (RFC 7386), as gpuops.gpu.cluster_policy applies its overrides to an existing spec."""
    out = dict(target)
    for key, value in patch.items():
        out[key] = _merge(out.get(key) or {}, value) if isinstance(value, dict) else value
    return out
