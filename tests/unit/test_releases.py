"""The releases: releases.yaml, the git tags, the version this code says
it is, and the release notes (reno) an operator reads."""
import importlib.metadata
import os
import subprocess
import sys

import pytest
import yaml
from packaging import version as pep440

from cyborg_lite.common import version
from tests import servers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _releases():
    with open(os.path.join(ROOT, 'releases.yaml')) as f:
        return yaml.safe_load(f)['releases']


def _git_checkout_or_skip():
    if _git('rev-parse', '--git-dir').returncode == 0:
        return
    assert not servers.under_ci(), 'CI runs on a clone: the git history'
    pytest.skip('not a git checkout (it fails instead under CI=true)')


def _git(*args):
    return subprocess.run(['git', '-C', ROOT] + list(args),
                          capture_output=True, text=True)


def test_first_release_is_main_of_2026_12_06():
    first = _releases()[0]
    assert first['version'] == '2026.1.0'
    assert first['commit'] == 'cfd342ffdeb92b95dc193217ec20b162cd01c0bd'


def test_releases_ascend_and_this_code_is_newer_than_the_last():
    versions = [pep440.Version(str(r['version'])) for r in _releases()]
    assert versions == sorted(set(versions))
    assert pep440.Version(version.VERSION) > versions[-1]
    # What an upgrade starts from is the last release recorded.
    assert version.PREVIOUS_RELEASE == str(_releases()[-1]['version'])


def test_installed_metadata_says_the_same_version():
    # setup.cfg reads common/version.py: pip and --version agree.
    assert importlib.metadata.version('cyborg_lite') == version.VERSION


@pytest.mark.parametrize('release', _releases(),
                         ids=lambda r: str(r['version']))
def test_each_release_commit_is_in_this_history(release):
    _git_checkout_or_skip()
    commit = release['commit']
    assert _git('merge-base', '--is-ancestor', commit, 'HEAD'
                ).returncode == 0, '%s is not an ancestor of HEAD' % commit
    tag = _git('rev-parse', '--verify', '--quiet',
               'refs/tags/%s^{commit}' % release['version'])
    if tag.returncode == 0:     # a clone may come without tags
        assert tag.stdout.strip() == commit


@pytest.mark.parametrize('release', _releases(),
                         ids=lambda r: str(r['version']))
def test_each_release_schema_is_its_commits_alembic_head(release):
    _git_checkout_or_skip()
    listed = _git('ls-tree', '--name-only', release['commit'],
                  'db/migrations/versions/').stdout.split()
    assert max(os.path.basename(p)[:4] for p in listed
               if p.endswith('.py')) == str(release['schema'])


def test_release_notes_lint_clean():
    reno = os.path.join(os.path.dirname(sys.executable), 'reno')
    result = subprocess.run([reno, 'lint'], cwd=ROOT, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr
