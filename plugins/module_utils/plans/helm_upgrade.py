# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helm upgrade of the NFD and GPU operator releases to a pinned chart version. Pure, no I/O.

The upgrade role (``upgrade_method: helm``) asks twice. First with what it read from the cluster and the
chart repository: each release as ``helm get`` shows it (kubernetes.core.helm_info: chart, revision, status,
user-supplied and computed values), the versions the repository's index offers, the rollout lock and the
nodes. The answer says per release whether it may move and where to (``action``: ``upgrade``, ``downgrade``,
``values`` for the same version with changed values, or ``none``), or why not, one message per reason:

* the release exists, was installed by Helm, is ``deployed`` and runs the chart asked for;
* the target is a version (semantic versioning, a leading ``v`` allowed) the repository offers;
* it is not older than the installed version unless ``allow_downgrade`` is set;
* the jump is supported: it crosses at most ``max_release_lines`` release lines (``major.minor``) the
  repository offers above the installed one (0 = no limit); a patch release of the installed line always
  may. The collection's rule, not the charts': each line's release notes describe the change from the line
  before it, and the CRD and value changes of lines skipped beyond that are not checked here;
* no GPU rollout holds the lock and no node is in the middle of one (plans.upgrade.changes_in_progress).

Then, once the role pulled each target chart, with its Chart.yaml, values.yaml, crds/ files and first-level
subcharts: the values the new revision is given (the release's user-supplied values with the role's
overrides merged over them), the computed values diff against the release's (plans.helm_values), and the
CRD files to apply before ``helm upgrade`` (the chart's crds/ and those of its enabled subcharts; none on a
downgrade, so newer CRDs stay). Asked a third time with the CRD files the API server refused in a server-side
apply dry run (an immutable field such as a CRD's scope), it adds those as errors. Every result carries
``helm rollback <release> <revision> -n <namespace>``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    bool_errors, is_ascii_digits, is_dns_label, is_int, type_name)
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import helm_values
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.upgrade import changes_in_progress

LABELS = {'nfd': 'Node Feature Discovery', 'gpu_operator': 'GPU operator'}
# where each chart is published (for the messages): chart name, repository
PUBLISHED = {'gpu_operator': ('gpu-operator', 'https://helm.ngc.nvidia.com/nvidia'),
             'nfd': ('node-feature-discovery', 'https://kubernetes-sigs.github.io/node-feature-discovery/charts')}
DEFAULT_MAX_RELEASE_LINES = 2
OFFERED_SHOWN = 8
_VERSION = re.compile(r'^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$', re.ASCII)
_RELEASE_NAME = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
_CHART_VERSION = re.compile(r'-v?\d+\.\d+', re.ASCII)


# --- versions ----------------------------------------------------------------------------------

def version_key(text):
    """A sort key of a chart version by semantic versioning ('v25.10.1', '0.18.2', '1.0.0-rc.1' < '1.0.0'),
    None when ``text`` is not one."""
    match = _VERSION.match(str(text or '').strip())
    if not match:
        return None
    major, minor, patch, pre = match.groups()
    pre_key = (1,) if pre is None else (0,) + tuple(
        (0, int(p), '') if is_ascii_digits(p) else (1, 0, p) for p in pre.split('.'))
    return (int(major), int(minor or 0), int(patch or 0), pre_key)


def release_line(key):
    return key[:2]


def is_prerelease(key):
    return key[3] != (1,)


def split_chart(chart, expected=None):
    """``(name, version)`` of helm's ``<name>-<version>`` ('gpu-operator-v25.10.1')."""
    text = str(chart or '')
    if expected and text.startswith(expected + '-') and version_key(text[len(expected) + 1:]):
        return expected, text[len(expected) + 1:]
    match = _CHART_VERSION.search(text)
    return (text[:match.start()], text[match.start() + 1:]) if match else (text, '')


def chart_name(ref):
    """The chart's name in a reference: 'gpu-operator', 'nvidia/gpu-operator', 'oci://host/charts/gpu-operator'."""
    return str(ref or '').rstrip('/').rsplit('/', 1)[-1]


def offered_match(target, offered):
    """The repository's spelling of ``target`` ('25.10.1' finds 'v25.10.1'), None when it does not offer it."""
    if target in offered:
        return target
    key = version_key(target)
    return next((v for v in offered if key is not None and version_key(v) == key), None)


# --- inputs --------------------------------------------------------------------------------------

def _release_input_errors(rel):
    prefix = rel['var_prefix']
    errors = []
    if not isinstance(rel.get('target'), str) or version_key(rel['target']) is None:
        errors.append('%s_helm_chart_version %r is not a chart version (semantic versioning, for example '
                      'v25.10.1 or 0.18.2)' % (prefix, rel.get('target')))
    release = rel.get('release')
    if not isinstance(release, str) or len(release) > 53 or not _RELEASE_NAME.match(release):
        errors.append('%s_helm_release_name %r is not a Helm release name (lowercase letters, digits, - and ., at most '
                      '53 characters)' % (prefix, release))
    if not is_dns_label(rel.get('namespace')):
        errors.append('%s_namespace %r is not a namespace name' % (prefix, rel.get('namespace')))
    ref, url = rel.get('chart_ref'), rel.get('repo_url')
    name, repo = PUBLISHED.get(rel.get('operator'), ('<chart>', 'https://<repository>'))
    if not isinstance(ref, str) or not chart_name(ref):
        errors.append('%s_helm_chart_ref must name the chart the release runs, for example %s (with '
                      '%s_helm_chart_repo_url %s or its mirror), or an oci:// reference; got %r'
                      % (prefix, name, prefix, repo, ref))
    elif ref.startswith('oci://'):
        if url:
            errors.append('%s_helm_chart_repo_url must be empty with an oci:// chart reference (%s), got %r'
                          % (prefix, ref, url))
    elif not isinstance(url, str) or not re.match(r'^https?://[^/\s]+', url):
        errors.append('%s_helm_chart_repo_url must be the http(s) URL of the chart repository or mirror that serves '
                      'index.yaml, for example %s (or give an oci:// %s_helm_chart_ref), got %r' % (prefix, repo, prefix, url))
    elif '/' in ref:
        errors.append('%s_helm_chart_ref %r: with %s_helm_chart_repo_url give the chart name only (%s); a local chart '
                      'is not a repository' % (prefix, ref, prefix, chart_name(ref)))
    if not isinstance(rel.get('values') if rel.get('values') is not None else {}, dict):
        errors.append('%s_helm_values must be a mapping, got %s' % (prefix, type_name(rel.get('values'))))
    return errors


def input_errors(request):
    """Errors of the role's variables, before anything is read: the releases to upgrade and the options."""
    errors = []
    for rel in request.get('releases') or []:
        errors.extend(_release_input_errors(rel))
    limit = request.get('max_release_lines', DEFAULT_MAX_RELEASE_LINES)
    if not is_int(limit) or limit < 0:
        errors.append('upgrade_helm_max_release_lines must be a whole number of 0 or more (0 = no limit), got %r'
                      % (limit,))
    errors.extend(bool_errors(request.get('allow_downgrade', False), 'upgrade_helm_allow_downgrade'))
    return errors


# --- one release ---------------------------------------------------------------------------------

def _status_hint(status, rel):
    if status == 'failed':
        return ('roll it back to its last good revision first (helm history %s -n %s, then helm rollback %s '
                '<revision> -n %s)' % (rel['release'], rel['namespace'], rel['release'], rel['namespace']))
    if status.startswith('pending'):
        return 'another Helm operation on it is running or was interrupted; let it finish, or roll it back'
    return 'it is being or was uninstalled'


def _release_errors(rel, status, label):
    """Why the installed release cannot be upgraded: missing, not deployed, another chart."""
    prefix = rel['var_prefix']
    if not status:
        return ['%s: no Helm release %s in namespace %s: it was not installed with Helm there (installed through '
                'OLM? use upgrade_method: olm), or set %s_helm_release_name and %s_namespace'
                % (label, rel['release'], rel['namespace'], prefix, prefix)]
    errors = []
    state = str(status.get('status') or '').lower()
    if state != 'deployed':
        errors.append('%s: Helm release %s/%s is %s (revision %s), not deployed; %s' % (
            label, rel['namespace'], rel['release'], state or 'without a status', status.get('revision'),
            _status_hint(state, rel)))
    name, _version = split_chart(status.get('chart'), chart_name(rel['chart_ref']))
    if name != chart_name(rel['chart_ref']):
        errors.append('%s: Helm release %s/%s runs chart %s, not %s; set %s_helm_chart_ref to the chart it runs'
                      % (label, rel['namespace'], rel['release'], status.get('chart'), chart_name(rel['chart_ref']),
                         prefix))
    return errors


def _where(rel):
    return rel['repo_url'] or rel['chart_ref']


def _offered_errors(rel, label, target):
    """(the repository's spelling of the target, errors, warnings) from the versions its index offers."""
    offered = rel.get('offered')
    if offered is None and rel['chart_ref'].startswith('oci://'):
        return target, [], ['%s: an OCI registry lists no chart versions: %s %s is checked by pulling it, and the '
                            'release lines between are not counted' % (label, rel['chart_ref'], target)]
    if offered is None:
        return None, ['%s: could not read the chart repository index %s/index.yaml (the warning above gives the '
                      'reason); check %s_helm_chart_repo_url and that the repository or mirror answers'
                      % (label, rel['repo_url'].rstrip('/'), rel['var_prefix'])], []
    found = offered_match(target, offered)
    if found is None:
        newest = sorted((v for v in offered if version_key(v)), key=version_key, reverse=True)[:OFFERED_SHOWN]
        return None, ['%s: chart %s version %s is not in the repository %s (%s)' % (
            label, chart_name(rel['chart_ref']), target, _where(rel),
            'it offers %s%s' % (', '.join(newest), ', ...' if len(offered) > len(newest) else '') if offered
            else 'it offers no version of that chart')], []
    return found, [], []


def _jump_errors(rel, label, installed, target, limit):
    """The supported-jump rule: at most ``limit`` release lines the repository offers, crossed upwards."""
    old, new = version_key(installed), version_key(target)
    if not limit or rel.get('offered') is None or release_line(new) <= release_line(old):
        return []
    lines = sorted(set(release_line(version_key(v)) for v in rel['offered'] if version_key(v)
                       and not is_prerelease(version_key(v))
                       and release_line(old) < release_line(version_key(v)) <= release_line(new))
                   | {release_line(new)})
    if len(lines) <= limit:
        return []
    stop = lines[limit - 1]
    step = max((v for v in rel['offered'] if version_key(v) and release_line(version_key(v)) == stop
                and not is_prerelease(version_key(v))), key=version_key, default='%d.%d' % stop)
    return ['%s: %s -> %s crosses %d release lines the repository offers (%s), more than '
            'upgrade_helm_max_release_lines (%d); upgrade to %s first, or raise upgrade_helm_max_release_lines '
            'when the release notes of every line in between allow it' % (
                label, installed, target, len(lines), ', '.join('%d.%d' % line for line in lines), limit, step)]


def _direction(rel, plan, allow_downgrade):
    """The action from the installed and target versions and the values; errors of a refused downgrade."""
    order = (version_key(plan['to_version']) > version_key(plan['from_version'])) - (
        version_key(plan['to_version']) < version_key(plan['from_version']))
    if order > 0:
        return 'upgrade', []
    if order < 0:
        if allow_downgrade:
            plan['warnings'].append('%s: downgrade from %s to %s: the CRDs stay at the installed version'
                                    % (plan['label'], plan['from_version'], plan['to_version']))
            return 'downgrade', []
        return 'none', ['%s: the target %s is older than the installed %s; a downgrade needs '
                        'upgrade_helm_allow_downgrade: true (to undo an upgrade, rather run %s)'
                        % (plan['label'], plan['to_version'], plan['from_version'], plan['rollback'])]
    return ('values' if plan['values'] != plan['user_values'] else 'none'), []


def release_plan(rel, max_release_lines=DEFAULT_MAX_RELEASE_LINES, allow_downgrade=False):
    """The decision for one release (see the module's description); ``chart`` set once pulled and read."""
    label = LABELS.get(rel['operator'], rel['operator'])
    status = (rel.get('info') or {}).get('status') or {}
    plan = {'operator': rel['operator'], 'label': label, 'release': rel['release'], 'namespace': rel['namespace'],
            'chart': chart_name(rel['chart_ref']), 'from_version': None, 'to_version': rel['target'],
            'from_revision': None, 'action': 'none', 'user_values': status.get('values') or {},
            'values': {}, 'user_values_diff': [], 'values_diff': None, 'crds': None, 'rollback': None,
            'pull': None, 'errors': [], 'warnings': []}
    plan['errors'] = _release_errors(rel, status, label)
    if not status:
        return plan
    plan['from_version'] = split_chart(status.get('chart'), plan['chart'])[1]
    plan['from_revision'] = int(status['revision']) if is_ascii_digits(str(status.get('revision', ''))) else None
    plan['rollback'] = 'helm rollback %s %s -n %s' % (rel['release'], plan['from_revision'], rel['namespace'])
    plan['values'] = helm_values.merge_values(plan['user_values'], rel.get('values') or {})
    plan['user_values_diff'] = helm_values.values_diff(plan['user_values'], plan['values'])
    found, errors, warnings = _offered_errors(rel, label, rel['target'])
    plan['errors'].extend(errors)
    plan['warnings'].extend(warnings)
    if not plan['errors'] and version_key(plan['from_version']) is None:
        plan['errors'].append('%s: the installed chart version %r (%s) is not semantic versioning; upgrade it with '
                              'helm by hand' % (label, plan['from_version'], status.get('chart')))
    if plan['errors']:
        return plan
    plan['to_version'] = found
    plan['action'], errors = _direction(rel, plan, allow_downgrade)
    plan['errors'].extend(errors)
    if plan['action'] == 'upgrade':
        plan['errors'].extend(_jump_errors(rel, label, plan['from_version'], found, max_release_lines))
    if plan['action'] != 'none' and not plan['errors']:
        plan['pull'] = {'operator': rel['operator'], 'chart_ref': rel['chart_ref'], 'repo_url': rel['repo_url'],
                        'version': found, 'chart': plan['chart']}
    return plan


# --- the pulled chart ----------------------------------------------------------------------------

def _tree(chart):
    """The chart as plans.helm_values reads it, from the files the role read."""
    subs = dict(((sub.get('chart') or {}).get('name'), {'values': sub.get('values') or {},
                                                        'dependencies': (sub.get('chart') or {}).get('dependencies')})
                for sub in chart.get('subcharts') or [])
    return {'values': chart.get('values') or {}, 'dependencies': (chart.get('chart') or {}).get('dependencies'),
            'subcharts': subs}


def chart_plan(plan, rel):
    """Complete ``plan`` with what the pulled chart says: values diff, CRDs first, or the reason it cannot."""
    chart = rel.get('chart')
    if rel.get('pull_error') or not chart:
        plan['errors'].append('%s: could not pull chart %s %s from %s: %s' % (
            plan['label'], plan['chart'], plan['to_version'], _where(rel), rel.get('pull_error') or 'nothing read'))
        return plan
    meta = chart.get('chart') or {}
    if meta.get('name') != plan['chart'] or version_key(meta.get('version')) != version_key(plan['to_version']):
        plan['errors'].append('%s: the pulled chart is %s %s, not %s %s' % (
            plan['label'], meta.get('name'), meta.get('version'), plan['chart'], plan['to_version']))
        return plan
    tree = _tree(chart)
    new = helm_values.computed_values(tree, plan['values'])
    plan['values_diff'] = helm_values.values_diff(rel.get('computed') or {}, new)
    enabled = helm_values.enabled_subcharts(tree, plan['values'])
    crds = sorted(chart.get('crds') or []) + sorted(path for sub in chart.get('subcharts') or []
                                                    if (sub.get('chart') or {}).get('name') in enabled
                                                    for path in sub.get('crds') or [])
    plan['crds'] = [] if plan['action'] == 'downgrade' else crds
    if chart.get('archives'):
        plan['warnings'].append('%s: subchart archives %s were not opened: their default values are not in the '
                                'values diff and their CRDs are not applied first'
                                % (plan['label'], ', '.join(chart['archives'])))
    return plan


def _api_message(text):
    """The ``message`` of the API server's Status in a kubernetes.core error (``Failed to apply object:
    b'{"kind":"Status",...,"message":"...",...}'``), else the text itself, shortened."""
    text = str(text or '').strip()
    match = re.search(r'"message":"(.*?)(?<!\\)","', text)
    if match:
        text = match.group(1).replace('\\\\"', '"').replace('\\"', '"')
    return text if len(text) <= 400 else text[:397] + '...'


def crd_refusals(results):
    """``{operator: [(CRD file, error)]}`` from the role's dry-run loop over its upgrades and their CRD files
    (kubernetes.core.k8s with ``failed_when: false``, item ``[release plan, file]``): a refused file has no
    ``result``."""
    out = {}
    for r in results or []:
        refused = isinstance(r, dict) and 'result' not in r and not r.get('skipped')
        if refused and isinstance(r.get('item'), (list, tuple)):
            out.setdefault(r['item'][0]['operator'], []).append((r['item'][1], r.get('msg') or 'refused'))
    return out


def crd_errors(plan, refusals):
    """Errors of the CRD files the API server refuses (server-side apply in dry run): ``refusals`` is
    ``[(path, error text)]``."""
    return ['%s: the cluster refuses %s of chart %s %s (server-side apply, dry run): %s' % (
        plan['label'], path.rsplit('/', 1)[-1], plan['chart'], plan['to_version'], _api_message(text))
        for path, text in refusals]


# --- the whole upgrade ---------------------------------------------------------------------------

def _crd_names(paths):
    return ', '.join(str(p).rsplit('/', 1)[-1] for p in paths) or 'none'


def action_line(plan):
    """One line of the plan for a release."""
    where = 'Helm release %s/%s' % (plan['namespace'], plan['release'])
    if plan['errors']:
        return '%s: %s: refused (below)' % (plan['label'], where)
    if plan['action'] == 'none':
        return '%s: %s runs chart %s %s (revision %s) with these values already: nothing to do' % (
            plan['label'], where, plan['chart'], plan['from_version'], plan['from_revision'])
    what = {'upgrade': 'upgrade', 'downgrade': 'downgrade', 'values': 'new values for'}[plan['action']]
    crds = ('the CRDs first (%s), then ' % _crd_names(plan['crds'])) if plan['crds'] else ''
    if plan['crds'] is None:
        crds = 'the CRDs of the chart first, then '
    return '%s: %s %s from chart %s %s (revision %s) to %s: %shelm upgrade; undo: %s' % (
        plan['label'], what, where, plan['chart'], plan['from_version'], plan['from_revision'],
        plan['to_version'], crds, plan['rollback'])


def helm_upgrade_plan(request):
    """The plan of a Helm upgrade run. ``request``: ``releases`` (each: ``operator``, ``var_prefix``, ``release``,
    ``namespace``, ``chart_ref``, ``repo_url``, ``target``, ``values``, ``info`` (helm_info's result),
    ``computed`` (the computed values), ``offered`` (the versions of the index, None when not read),
    ``chart`` and ``pull_error`` once pulled, ``crd_refusals`` once its CRDs were tried in dry run), ``lock``,
    ``nodes``, ``max_release_lines``, ``allow_downgrade``.
    Returns ``{'releases', 'pulls', 'upgrades', 'values_diff', 'actions', 'errors', 'warnings', 'changes'}``."""
    errors = input_errors(request)
    if errors:
        return {'releases': [], 'pulls': [], 'upgrades': [], 'values_diff': {}, 'actions': [], 'errors': errors,
                'warnings': [], 'changes': False}
    plans = []
    for rel in request.get('releases') or []:
        plan = release_plan(rel, request.get('max_release_lines', DEFAULT_MAX_RELEASE_LINES),
                            request.get('allow_downgrade', False))
        if plan['pull'] and ('chart' in rel or 'pull_error' in rel):
            chart_plan(plan, rel)
            plan['errors'].extend(crd_errors(plan, rel.get('crd_refusals') or []))
        plans.append(plan)
    errors = [e for plan in plans for e in plan['errors']] + changes_in_progress(request.get('lock'),
                                                                                 request.get('nodes'))
    moving = [plan for plan in plans if plan['action'] != 'none' and not plan['errors']]
    return {'releases': plans, 'pulls': [] if errors else [plan['pull'] for plan in moving],
            'upgrades': [] if errors else moving, 'actions': [action_line(plan) for plan in plans],
            'values_diff': dict((plan['operator'], plan['values_diff'] if plan['values_diff'] is not None
                                 else plan['user_values_diff']) for plan in moving),
            'errors': errors, 'warnings': [w for plan in plans for w in plan['warnings']],
            'changes': not errors and bool(moving)}
