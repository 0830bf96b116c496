"""The previous release, installed from this repository's own history.

``install(release, dest)`` writes, under ``dest``, with no network and in
about a second:

* ``src/``: the release's tree, ``git archive <commit>`` of the commit
  releases.yaml records for it (a clone without tags has the file);
* ``venv/``: a venv of its own (``python -m venv --without-pip``) whose
  site-packages holds
  - ``cyborg_lite-<version>.dist-info``: METADATA and the entry points of
    the old tree's setup.cfg (its drivers, sinks and policies are found
    through them, as pip would have installed them), first on the path so
    that importlib.metadata takes it over this tree's editable install;
  - a .pth naming, in this order, the old ``src/`` and this venv's
    site-packages: the old code is imported, the dependencies are the
    ones installed here (the old release's requirements are a subset;
    a missing one fails the old service's start, loudly);
  - no other .pth of this venv is run, so this tree's editable finder
    never sees an import;
* ``venv/bin/<script>`` for every console script of the old setup.cfg.

Not ``pip install``: building a wheel of the old tree takes a minute on a
loaded 2-core CI and needs setuptools' build backend at the old release's
pin; this layout is what such an install leaves, minus the copy.
"""
import configparser
import io
import os
import subprocess
import sys
import sysconfig
import tarfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def previous_release():
    """releases.yaml's entry (version, commit, schema) of the release
    this code upgrades from."""
    from cyborg_lite.common import version
    with open(os.path.join(ROOT, 'releases.yaml')) as f:
        releases = yaml.safe_load(f)['releases']
    for release in releases:
        if release['version'] == version.PREVIOUS_RELEASE:
            return release
    raise LookupError('releases.yaml has no %s' % version.PREVIOUS_RELEASE)


def _extract(commit, src):
    archive = subprocess.run(['git', '-C', ROOT, 'archive', commit],
                             capture_output=True, check=True).stdout
    os.makedirs(src)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(src, filter='data')


def _entry_points(src):
    parser = configparser.RawConfigParser()
    parser.optionxform = str
    parser.read(os.path.join(src, 'setup.cfg'))
    groups = {}
    for group, text in parser.items('options.entry_points'):
        lines = [line.strip() for line in text.splitlines()
                 if line.strip() and not line.strip().startswith('#')]
        groups[group] = [tuple(p.strip() for p in line.split('=', 1))
                         for line in lines]
    return groups


def _site_packages(venv):
    return sysconfig.get_path('purelib', vars={'base': venv,
                                               'platbase': venv})


def _write_dist_info(site, version, groups):
    dist_info = os.path.join(site, 'cyborg_lite-%s.dist-info' % version)
    os.makedirs(dist_info)
    with open(os.path.join(dist_info, 'METADATA'), 'w') as f:
        f.write('Metadata-Version: 2.1\nName: cyborg_lite\n'
                'Version: %s\n' % version)
    with open(os.path.join(dist_info, 'entry_points.txt'), 'w') as f:
        for group, entries in groups.items():
            f.write('[%s]\n' % group)
            f.writelines('%s = %s\n' % entry for entry in entries)
            f.write('\n')


def _write_scripts(venv, groups):
    python = os.path.join(venv, 'bin', 'python')
    for name, target in groups.get('console_scripts', ()):
        module, func = target.split(':')
        path = os.path.join(venv, 'bin', name)
        with open(path, 'w') as f:
            f.write('#!%s\nimport sys\nfrom %s import %s\n'
                    'sys.exit(%s())\n' % (python, module, func, func))
        os.chmod(path, 0o755)


def clean_env():
    """The environment minus PYTHONPATH, which would put another tree
    before a service's own."""
    return {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}


def _check_imports_old(venv, src):
    found = subprocess.run(
        [os.path.join(venv, 'bin', 'python'), '-c',
         'import cyborg_lite; print(cyborg_lite.__file__)'],
        capture_output=True, text=True, check=True, cwd=venv,
        env=clean_env()).stdout.strip()
    if not found.startswith(src + os.sep):
        raise RuntimeError('the previous release imports %s' % found)


def install(dest):
    """Install the previous release under ``dest``; returns (version,
    its venv's bin directory)."""
    release = previous_release()
    version, commit = release['version'], release['commit']
    src = os.path.join(dest, 'src')
    venv = os.path.join(dest, 'venv')
    _extract(commit, src)
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', venv],
                   check=True)
    site = _site_packages(venv)
    groups = _entry_points(src)
    _write_dist_info(site, version, groups)
    with open(os.path.join(site, 'previous_release.pth'), 'w') as f:
        f.write('%s\n%s\n' % (src, _site_packages(sys.prefix)))
    _write_scripts(venv, groups)
    _check_imports_old(venv, src)
    return version, os.path.join(venv, 'bin')
