# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA vGPU guest-driver licensing for the GPU operator. Pure, no I/O, no secrets.

Facts (gpu-operator v25.10 ``controllers/object_controls.go`` ``applyLicensingConfig``,
``internal/consts``; ``api/nvidia/v1/clusterpolicy_types.go``; docs/facts.md#vgpu-licensing):
- ``driver.licensingConfig{secretName, nlsEnabled}``; ``configMapName`` is DEPRECATED ("in
  favour of SecretName"); a Secret takes precedence over a ConfigMap.
- The Secret keys are exactly ``gridd.conf`` (always mounted at ``/drivers/gridd.conf``) and
  ``client_configuration_token.tok`` (mounted at
  ``/drivers/ClientConfigToken/client_configuration_token.tok`` only when ``nlsEnabled``).
- The driver image is ``driver.repository/driver.image:driver.version`` (the operator appends
  the OS tag, e.g. ``-rhcos4.18``); ``driver.imagePullSecrets`` is a list of Secret names.
- gridd.conf is ``Key=Value`` lines; ``FeatureType`` 0 unlicensed, 1 NVIDIA vGPU, 2 NVIDIA RTX
  Virtual Workstation, 4 NVIDIA Virtual Compute Server (NVML ``nvmlGridLicenseFeatureCode_t``).
  With NLS the client configuration token names the license service, so ``ServerAddress`` is
  only needed for a legacy license server.
- The guest driver must come from the same NVIDIA driver branch as the host's vGPU manager, or an
  older one (docs/vgpu.md#guest-driver-and-host-vgpu-manager): :func:`host_manager_errors`.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common import image_ref
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.cluster_policy import select_policy
from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_ascii_digits, is_dns_subdomain, suggest, type_name, unknown_key_error)

GRIDD_KEY = 'gridd.conf'
TOKEN_KEY = 'client_configuration_token.tok'
FEATURE_TYPES = {0: 'unlicensed', 1: 'NVIDIA vGPU', 2: 'NVIDIA RTX Virtual Workstation',
                 4: 'NVIDIA Virtual Compute Server'}
# Settings documented in the NVIDIA vGPU client licensing guide; other keys are accepted unless
# they look like a typo of one of these (then they get the usual unknown-key message).
GRIDD_KEYS = ('FeatureType', 'ServerAddress', 'ServerPort', 'BackupServerAddress', 'BackupServerPort',
              'EnableUI', 'LicenseInterval', 'ClientConfigTokenPath', 'ProxyServerAddress',
              'ProxyServerPort', 'ProxyUserName', 'ProxyCredentialsFilePath')
_GRIDD_KEY_RE = re.compile(r'^[A-Za-z][A-Za-z0-9_]*$')
_VERSION_RE = re.compile(r'^([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|sha256:[0-9a-f]{64})$')
# vGPU software release (major) -> NVIDIA driver branch of its vGPU manager and guest drivers (NVIDIA Virtual
# GPU Software release notes; docs/vgpu.md#guest-driver-and-host-vgpu-manager).
VGPU_RELEASE_BRANCHES = {13: 470, 14: 510, 15: 525, 16: 535, 17: 550, 18: 570, 19: 580}
_HOST_VERSION_RE = re.compile(r'^[Rr]?([0-9]{1,4})((\.[0-9]{1,4}){0,2})$')
# A guest driver version or image tag: <branch>.<minor>[.<patch>], then anything (-grid, -rhcos4.18, ...).
_GUEST_VERSION_RE = re.compile(r'^([0-9]{3,4})\.[0-9]{1,4}(\.[0-9]{1,4})?([^0-9.].*)?$')
_IMAGE_NAME_RE = re.compile(r'^[a-z0-9]+(([._]|__|[-]+)[a-z0-9]+)*(/[a-z0-9]+(([._]|__|[-]+)[a-z0-9]+)*)*$')


def _gridd_value(value):
    if isinstance(value, bool):
        return 'TRUE' if value else 'FALSE'
    return str(value)


def gridd_settings_errors(settings):
    """Problems in a ``{Key: value}`` gridd.conf mapping ([] when valid)."""
    if settings is None:
        return []
    if not isinstance(settings, dict):
        return ['vgpu_gridd_settings must be a mapping of gridd.conf keys to values, got %s'
                % type_name(settings)]
    errors = []
    for key, value in settings.items():
        key = str(key)
        if not _GRIDD_KEY_RE.match(key):
            errors.append("vgpu_gridd_settings key '%s' is not a gridd.conf setting name" % key)
            continue
        if key not in GRIDD_KEYS and suggest(key, GRIDD_KEYS):
            errors.append(unknown_key_error(key, GRIDD_KEYS, 'vgpu_gridd_settings'))
            continue
        if value is None or isinstance(value, (dict, list, tuple)):
            errors.append('vgpu_gridd_settings.%s must be a string, number or boolean, got %s'
                          % (key, type_name(value)))
            continue
        if '\n' in _gridd_value(value) or '\r' in _gridd_value(value):
            errors.append('vgpu_gridd_settings.%s must be a single line' % key)
        if key == 'FeatureType' and (isinstance(value, bool) or not is_ascii_digits(str(value))
                                     or int(str(value)) not in FEATURE_TYPES):
            errors.append('vgpu_gridd_settings.FeatureType must be one of %s, got %r' % (
                ', '.join('%d (%s)' % kv for kv in sorted(FEATURE_TYPES.items())), value))
        if key in ('ServerPort', 'BackupServerPort', 'ProxyServerPort', 'LicenseInterval') \
                and not is_ascii_digits(str(value)):
            errors.append('vgpu_gridd_settings.%s must be a number, got %r' % (key, value))
    return errors


def render_gridd_conf(settings):
    """gridd.conf text for ``settings``: documented keys first in their order, then the others
    sorted; deterministic so the Secret does not change on a re-run."""
    settings = dict(settings or {})
    lines = ['# NVIDIA vGPU licensing (gridd.conf), managed by the gpuops.gpu vgpu role']
    for key in GRIDD_KEYS:
        if key in settings and settings[key] not in (None, ''):
            lines.append('%s=%s' % (key, _gridd_value(settings[key])))
    for key in sorted(set(str(k) for k in settings) - set(GRIDD_KEYS)):
        if settings[key] not in (None, ''):
            lines.append('%s=%s' % (key, _gridd_value(settings[key])))
    return '\n'.join(lines) + '\n'


def gridd_text_errors(text):
    """Problems in a verbatim gridd.conf ([] when valid): every line blank, a comment or Key=Value."""
    if not isinstance(text, str):
        return ['vgpu_gridd_conf must be text, got %s' % type_name(text)]
    errors = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith('#'):
            continue
        key, sep, _value = stripped.partition('=')
        if not sep or not _GRIDD_KEY_RE.match(key.strip()):
            errors.append("vgpu_gridd_conf line %d is not 'Key=Value' or a # comment" % number)
    return errors


def gridd_settings_from_text(text):
    """``{Key: value}`` of a gridd.conf text (comments and blank lines skipped)."""
    out = {}
    for line in (text or '').splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith('#') and '=' in stripped:
            key, _sep, value = stripped.partition('=')
            out[key.strip()] = value.strip()
    return out


def driver_image_errors(repository, image, version):
    """Problems with the private-registry driver image fields ([] when valid or not set)."""
    if not repository and not version:
        return []
    errors = []
    if not repository:
        errors.append('vgpu_driver_repository is required with vgpu_driver_version (the private registry '
                      'repository of the vGPU guest driver image, e.g. registry.example.com/nvidia)')
    else:
        errors.extend(image_ref.repository_errors(repository, 'vgpu_driver_repository'))
    if not image or not isinstance(image, str) or not _IMAGE_NAME_RE.match(image):
        errors.append("vgpu_driver_image '%s' must be an image name such as driver (lowercase, no tag)" % image)
    if not version:
        errors.append('vgpu_driver_version is required with vgpu_driver_repository (the driver version the '
                      'image is tagged with, e.g. 580.95.05; the operator appends the OS tag)')
    elif not isinstance(version, str) or not _VERSION_RE.match(version):
        errors.append("vgpu_driver_version '%s' must be an image tag (letters, digits, '.', '_', '-') or a "
                      "sha256: digest" % (version,))
    return errors


def host_manager_branch(value):
    """``(driver branch, error)`` of the hosts' vGPU manager: a vGPU software release (``17.3``, ``17``) or
    the vGPU manager driver version (``550.90.05``, ``R550``)."""
    text = str(value).strip() if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ''
    match = _HOST_VERSION_RE.match(text)
    # a release is at most <major>.<minor> and never R-prefixed (R<branch> is a driver branch)
    release_like = match is not None and int(match.group(1)) < 100
    if not match or (release_like and (text[0] in 'Rr' or match.group(2).count('.') > 1)):
        return None, ("vgpu_host_manager_version '%s' must be the vGPU software release of the hosts (for example "
                      "17.3) or their vGPU manager driver version (for example 550.90.05)" % (value,))
    major = int(match.group(1))
    if major >= 100:
        return major, None
    if major not in VGPU_RELEASE_BRANCHES:
        return None, ('vgpu_host_manager_version %s: vGPU software release %d is not one this collection knows '
                      '(%d to %d); give the vGPU manager driver version of the hosts instead (for example '
                      '550.90.05)' % (text, major, min(VGPU_RELEASE_BRANCHES), max(VGPU_RELEASE_BRANCHES)))
    return VGPU_RELEASE_BRANCHES[major], None


def guest_driver_branch(version):
    """The driver branch of a guest driver version or image tag (``580.95.05-grid`` -> 580), None when it has
    none (a digest, an empty version)."""
    match = _GUEST_VERSION_RE.match(version) if isinstance(version, str) else None
    return int(match.group(1)) if match else None


def host_manager_errors(host_version, guest_version, guest_source):
    """``(errors, warnings)``: the guest driver ``guest_version`` (named by ``guest_source``, e.g.
    ``vgpu_driver_version``) against the hosts' vGPU manager ``host_version``.

    NVIDIA's rule: the guest driver's branch must not be newer than the vGPU manager's; a guest driver of
    the same branch, or of the branch before it, is supported."""
    if host_version in (None, ''):
        return [], []
    host_branch, error = host_manager_branch(host_version)
    if error:
        return [error], []
    if not guest_version:
        return [], ['vgpu_host_manager_version %s is set but the guest driver version is not known (%s is empty): '
                    'its compatibility with the vGPU manager was not checked' % (host_version, guest_source)]
    guest_branch = guest_driver_branch(guest_version)
    if guest_branch is None:
        return [], ['the guest driver version %s (%s) has no driver branch to compare with the vGPU manager %s: '
                    'check by hand that its branch is R%d or older' % (guest_version, guest_source, host_version,
                                                                       host_branch)]
    if guest_branch > host_branch:
        return ['the vGPU guest driver %s (%s, branch R%d) is newer than the vGPU manager %s on the hosts '
                '(vgpu_host_manager_version, branch R%d): a guest driver must come from the branch of the vGPU '
                'manager or an older one; use a guest driver of branch R%d or older, or upgrade the vGPU '
                'manager on the hosts first' % (guest_version, guest_source, guest_branch, host_version,
                                                host_branch, host_branch)], []
    branches = sorted(VGPU_RELEASE_BRANCHES.values())
    if guest_branch in branches and host_branch in branches \
            and branches.index(host_branch) - branches.index(guest_branch) > 1:
        return [], ['the vGPU guest driver %s (%s, branch R%d) is more than one branch older than the vGPU '
                    'manager %s (branch R%d): NVIDIA supports guest drivers of the vGPU manager\'s branch and of '
                    'the branch before it' % (guest_version, guest_source, guest_branch, host_version, host_branch)]
    return [], []


def vgpu_plan(config, cluster=None):
    """Errors, warnings, gridd.conf text and ClusterPolicy patch for the vgpu role.

    ``config``: secret_name, nls_enabled, gridd_conf (verbatim), gridd_settings, feature_type
    (default FeatureType of rendered settings), token_file,
    driver_repository, driver_image, driver_version, pull_secret_name, registry_server,
    registry_credentials (bool: username/password given), cluster_policy_name,
    operator_namespace, host_manager_version (the hosts' vGPU manager: checked against the guest driver
    version, ``driver_version`` or else the ClusterPolicy's ``driver.version``). ``cluster``:
    cluster_policies (list), namespace_exists (bool), token (``ansible.builtin.stat`` result's ``stat``).
    """
    config = dict(config or {})
    cluster = dict(cluster or {})
    plan = {'errors': [], 'warnings': [], 'gridd_conf': None, 'cluster_policy_name': None,
            'cluster_policy_patch': {}, 'registry_server': None}
    errors = plan['errors']
    nls = config.get('nls_enabled', True)
    errors.extend(_name_errors(config, nls))
    plan['gridd_conf'], settings, gridd_errors = _gridd_conf(config)
    errors.extend(gridd_errors)
    if nls is False and not (settings or {}).get('ServerAddress'):
        errors.append('vgpu_nls_enabled is false (legacy license server) but gridd.conf has no ServerAddress; '
                      'set vgpu_gridd_settings.ServerAddress or enable NLS')
    if nls is not False:
        errors.extend(_token_errors(config.get('token_file') or '', cluster.get('token') or {}))
    repository = config.get('driver_repository') or ''
    errors.extend(driver_image_errors(repository, config.get('driver_image') or 'driver',
                                      config.get('driver_version') or ''))
    server = config.get('registry_server') or (image_ref.registry_of(repository) if repository else '')
    if config.get('registry_credentials'):
        if not server:
            errors.append('vgpu_registry_username/password are set but there is no registry: set '
                          'vgpu_driver_repository or vgpu_registry_server')
        else:
            errors.extend(image_ref.repository_errors(server, 'vgpu_registry_server'))
    plan['registry_server'] = server or None
    if cluster.get('namespace_exists') is False:
        errors.append('namespace %s does not exist: install the GPU operator first or set '
                      'vgpu_operator_namespace' % config.get('operator_namespace'))
    policy, _matching, policy_errors = select_policy(cluster.get('cluster_policies'),
                                                     config.get('cluster_policy_name') or '', True,
                                                     'vgpu_cluster_policy_name')
    errors.extend(policy_errors)
    if policy is not None:
        _check_host_manager(plan, config, policy)
    if not errors:
        _plan_policy(plan, config, policy, nls)
    return plan


def _name_errors(config, nls):
    errors = []
    if not isinstance(nls, bool):
        errors.append('vgpu_nls_enabled must be true or false, got %s' % type_name(nls))
    for key in ('secret_name', 'pull_secret_name', 'operator_namespace'):
        value = config.get(key)
        if value and not is_dns_subdomain(value):
            errors.append("vgpu_%s '%s' must be a lowercase DNS name" % (key, value))
    if not config.get('secret_name'):
        errors.append('vgpu_licensing_secret_name must not be empty')
    return errors


def _gridd_conf(config):
    """(gridd.conf text, its settings, errors): the verbatim file, or the rendered settings."""
    verbatim = config.get('gridd_conf')
    settings = config.get('gridd_settings') or {}
    if isinstance(settings, dict) and config.get('feature_type') is not None and not verbatim:
        settings = dict({'FeatureType': config['feature_type']}, **settings)
    if verbatim and settings:
        return None, settings, ['set vgpu_gridd_conf (the file verbatim) or vgpu_gridd_settings (rendered), not both']
    if verbatim:
        text = verbatim if verbatim.endswith('\n') else verbatim + '\n'
        return text, gridd_settings_from_text(verbatim), gridd_text_errors(verbatim)
    return render_gridd_conf(settings), settings, gridd_settings_errors(settings)


def _token_errors(token_path, token):
    """Problems with the NLS client configuration token (``token``: the stat of ``token_path``)."""
    if not token_path:
        return ['vgpu_token_file is required with NLS: the path, on the Ansible controller, of the '
                'client_configuration_token.tok downloaded from the NVIDIA Licensing Portal']
    if not token.get('exists'):
        return ['vgpu_token_file %s does not exist on the Ansible controller; download the client '
                'configuration token from the NVIDIA Licensing Portal and set vgpu_token_file to its '
                'path' % token_path]
    if not token.get('isreg'):
        return ['vgpu_token_file %s is not a regular file' % token_path]
    if not token.get('size'):
        return ['vgpu_token_file %s is empty; download the client configuration token again' % token_path]
    return []


def _check_host_manager(plan, config, policy):
    """The guest driver the role installs (``driver_version``, else the ClusterPolicy's) against the hosts'
    vGPU manager version."""
    if config.get('driver_version'):
        version, source = config['driver_version'], 'vgpu_driver_version'
    else:
        version = ((policy.get('spec') or {}).get('driver') or {}).get('version') or ''
        source = 'driver.version of ClusterPolicy %s' % policy['metadata']['name']
    errors, warnings = host_manager_errors(config.get('host_manager_version'), version, source)
    plan['errors'].extend(errors)
    plan['warnings'].extend(warnings)


def _plan_policy(plan, config, policy, nls):
    """The ClusterPolicy ``driver`` patch (or why the operator-managed driver cannot be licensed)."""
    name = plan['cluster_policy_name'] = policy['metadata']['name']
    driver = (policy.get('spec') or {}).get('driver') or {}
    if driver.get('enabled') is False:
        plan['errors'].append('ClusterPolicy %s has driver.enabled: false, so the operator does not run the driver '
                              'and ignores licensingConfig; enable the operator-managed driver (vGPU guest driver '
                              'image) or license the preinstalled driver on the hosts' % name)
        return
    if driver.get('useNvidiaDriverCRD'):
        plan['warnings'].append('ClusterPolicy %s has driver.useNvidiaDriverCRD: true; licensing and the driver '
                                'image are then set per NVIDIADriver object, not in the ClusterPolicy' % name)
    patch = {'licensingConfig': {'secretName': config['secret_name'], 'nlsEnabled': nls}}
    current_licensing = driver.get('licensingConfig') or {}
    if current_licensing.get('configMapName'):
        patch['licensingConfig']['configMapName'] = ''
        plan['warnings'].append('driver.licensingConfig.configMapName %s (deprecated) is cleared in favour of the '
                                'Secret; delete that ConfigMap, it may still hold the licensing token'
                                % current_licensing['configMapName'])
    repository = config.get('driver_repository') or ''
    if repository:
        patch.update({'repository': repository.rstrip('/'), 'image': config.get('driver_image') or 'driver',
                      'version': config.get('driver_version') or ''})
    pull_secret = config.get('pull_secret_name') if config.get('registry_credentials') else None
    if pull_secret:
        current = list(driver.get('imagePullSecrets') or [])
        if pull_secret not in current:
            patch['imagePullSecrets'] = current + [pull_secret]
    plan['cluster_policy_patch'] = {'driver': patch}
