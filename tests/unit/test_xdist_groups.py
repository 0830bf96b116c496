"""`make test` runs `pytest -n 3 --dist loadgroup`: the tests of one
`xdist_group` share a worker, and with it their module- and package-scoped
servers (the multihost cluster, the all-in-one, a real Keystone), and they
never run at the same time as each other.

pytest-xdist 3.8 groups by renaming each item's ``_nodeid``, which pytest
9.2 no longer reads: the groups were then silently spread over the
workers (each starting its own cluster). setup.cfg keeps pytest below 9.2;
this shows the grouping still holds with what is installed.
"""
import os
import re
import subprocess
import sys

PROBE = '''
import pytest
pytestmark = pytest.mark.xdist_group('probe')
def test_a(): pass
def test_b(): pass
def test_c(): pass
def test_d(): pass
'''


def test_the_tests_of_a_group_run_on_one_worker(tmp_path):
    (tmp_path / 'test_probe.py').write_text(PROBE)
    # Its own (empty) configuration: not this project's conftest.
    (tmp_path / 'pytest.ini').write_text('[pytest]\n')
    # Only xdist among the installed plugins: each worker would load
    # schemathesis and hypothesis for nothing (most of the run's time).
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD='1')
    proc = subprocess.run(
        [sys.executable, '-m', 'pytest', '-p', 'xdist', '-n', '2',
         '--dist', 'loadgroup',
         '-v', '-p', 'no:cacheprovider', '--rootdir', str(tmp_path),
         # NOTE: a base of its own: else it first sweeps the numbered
         # temp dirs that earlier runs left (a minute for a gigabyte).
         '--basetemp', str(tmp_path / 'basetemp'),
         '-c', str(tmp_path / 'pytest.ini'), str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ran = re.findall(r'\[(gw\d+)\] .*PASSED \S*::(test_\w+)', proc.stdout)
    assert sorted(name for _, name in ran) == [
        'test_a', 'test_b', 'test_c', 'test_d'], proc.stdout
    assert len({worker for worker, _ in ran}) == 1, proc.stdout
