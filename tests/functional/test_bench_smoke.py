"""Each bench under bench/ runs at a tiny size, so the scripts do not rot.

No timing is asserted (the machine is shared and slow ones are not
wrong); what is checked is the output's structure and the counts that
are facts rather than speeds: an unchanged round writes nothing, every
changed region reaches Placement, every request succeeds. The API bench
runs without the Cyborg comparison (that would pip install Cyborg).
"""
import json
import os
import subprocess
import sys

import pytest

from tests import fork_server

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _bench(tmp_path, name, *args, timeout=300):
    output = tmp_path / ('%s.json' % name)
    proc = fork_server.run([sys.executable, '-m', 'bench.%s' % name,
                            '--output', str(output)] + list(args), cwd=ROOT,
                           capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    with open(output) as f:
        return json.load(f)


def test_fleet_bench_tiny(tmp_path):
    result = _bench(tmp_path, 'fleet', '--hosts', '2', '--cards', '2',
                    '--regions', '2', '--change-pct', '25',
                    '--candidates', '2', '--ab-rounds', '2')

    assert result['bench'] == 'fleet'
    assert result['params']['regions'] == 8
    rounds = result['rounds']
    assert set(rounds) == {'first', 'unchanged', 'change',
                           'unchanged_again'}
    for r in rounds.values():
        assert r['hosts'] == 2 and r['sync_failures'] == 0
        assert {'wall_s', 'per_host_ms', 'placement', 'db'} <= set(r)
        # CPU seconds by process (SQLite Placement: no database process).
        assert set(r['cpu_s']) == {'conductor', 'placement', 'machine'}
    first = rounds['first']
    assert first['cpu_s']['placement'] > 0 and first['cpu_s']['conductor'] > 0
    assert first['acks']['changed'] == 2
    assert first['placement']['writes'] > 0 and first['db']['writes'] > 0
    for name in ('unchanged', 'unchanged_again'):
        assert rounds[name]['acks'] == {'unchanged': 2, 'created': 0,
                                        'updated': 0, 'deleted': 0}
        assert rounds[name]['db']['writes'] == 0
        assert rounds[name]['placement']['requests'] == 0
    change = rounds['change']
    assert change['changed_regions'] == 2
    assert change['regions_not_in_placement'] == []
    assert change['regions_verified'] == 2
    assert change['placement']['writes'] > 0
    # A function never seen before: its trait is made first.
    assert 'PUT /traits/{name}' in change['placement']['by_kind']
    # The conductor served every host last: a changed host costs its
    # writes only, no read.
    assert change['placement']['by_method'].get('GET', 0) == 0
    ab = result['trust_own_publish_ab']
    assert set(ab['wall_s']) == {'trusted', 'read_tree'}
    assert all(len(walls) == 1 for walls in ab['wall_s'].values())
    # Without the trust, each changed host lists its tree first.
    assert ab['placement_requests']['read_tree'] > \
        ab['placement_requests']['trusted']
    assert ab['read_tree_over_trusted'] > 0
    assert result['placement_providers'] == result['expected_providers']
    for query in result['allocation_candidates']:
        assert query['requests'] == 2
        assert query['candidates_returned'] == 8
        assert query['p50_ms'] is not None


def test_fleet_bench_known_functions(tmp_path):
    result = _bench(tmp_path, 'fleet', '--hosts', '2', '--cards', '2',
                    '--regions', '2', '--change-pct', '25',
                    '--candidates', '0', '--functions', '3')

    assert result['params']['functions'] == 3
    change = result['rounds']['change']
    assert change['regions_verified'] == 2
    # The fleet's functions all got their traits in the first round: a
    # change writes the region providers' traits, nothing else.
    assert set(change['placement']['by_kind']) == {
        'PUT /resource_providers/{uuid}/traits'}


@pytest.mark.postgresql
def test_fleet_bench_conductor_processes(tmp_path):
    result = _bench(tmp_path, 'fleet', '--hosts', '4', '--cards', '2',
                    '--regions', '2', '--change-pct', '25',
                    '--candidates', '0', '--placement-db', 'postgresql',
                    '--placement-workers', '1', '--workers', '2',
                    '--conductor-processes', '2', '--ab-rounds', '2')

    assert result['params']['conductor_processes'] == 2
    rounds = result['rounds']
    for r in rounds.values():
        assert r['processes'] == 2 and r['sync_failures'] == 0
        assert set(r['cpu_s']) == {'conductor', 'conductor_db', 'placement',
                                   'placement_db', 'machine', 'bench'}
    assert rounds['first']['acks']['changed'] == 4
    assert rounds['first']['cpu_s']['conductor'] > 0
    for name in ('unchanged', 'unchanged_again'):
        assert rounds[name]['acks']['unchanged'] == 4
        assert rounds[name]['db']['writes'] == 0
        assert rounds[name]['placement']['requests'] == 0
    assert rounds['change']['regions_verified'] == 4
    assert result['placement_providers'] == result['expected_providers']
    assert result['sync_failures'] == []


def test_change_cost_bench_tiny(tmp_path):
    # This tree against itself: the plumbing, not a comparison.
    result = _bench(tmp_path, 'change_cost', '--baseline', ROOT,
                    '--hosts', '2', '--rounds', '2', '--trials', '1')

    assert result['bench'] == 'change_cost'
    for name in ('this', 'baseline'):
        [trial] = result['trials'][name]
        assert os.path.realpath(trial['root']) == os.path.realpath(ROOT)
        assert trial['changed_hosts'] >= 2
        assert trial['cpu_ms_per_changed_host'] > 0
        assert trial['cpu_ms_per_unchanged_host'] > 0
        assert trial['sync_failures'] == 0
    assert result['baseline_over_this'] > 0
    assert result['unchanged_baseline_over_this'] > 0


def test_health_cost_bench_tiny(tmp_path):
    # This tree against itself: the plumbing, and the facts: the moving
    # temperature changed no report, the unchanged reports wrote nothing.
    result = _bench(tmp_path, 'health_cost', '--baseline', ROOT,
                    '--cards', '2', '--regions', '2', '--scans', '3',
                    '--reports', '3', '--trials', '1')
    assert result['bench'] == 'health_cost'
    for name in ('this', 'baseline'):
        [trial] = result['trials'][name]
        assert trial['regions'] == 4
        assert trial['distinct_reports'] == 1
        assert trial['unchanged_report_writes'] == 0
        assert trial['cpu_ms_per_scan'] > 0
    assert result['scan_this_over_baseline'] > 0


@pytest.mark.parametrize('text', ['1', '-2', 'x'])
def test_fleet_bench_refuses_a_single_or_no_function_count(text):
    import argparse
    from bench import fleet
    with pytest.raises((argparse.ArgumentTypeError, ValueError)):
        fleet._function_count(text)


def test_api_bench_tiny_without_cyborg(tmp_path):
    # This tree against itself as the baseline: the plumbing of
    # --baseline, not a comparison.
    result = _bench(tmp_path, 'api', '--devices', '20', '--requests', '6',
                    '--list-requests', '2', '--binds', '3', '--rounds', '1',
                    '--concurrency', '2', '--no-cyborg', '--baseline', ROOT)

    assert result['bench'] == 'api'
    assert result['cyborg_version'] is None
    assert result['placement_sink'] is True
    assert {side: os.path.realpath(tree['root'])
            for side, tree in result['trees'].items()} == {
        'ours': os.path.realpath(ROOT), 'baseline': os.path.realpath(ROOT)}
    scenarios = result['scenarios']
    assert set(scenarios) == {'list_devices', 'create_profile',
                              'create_arq', 'bind', 'delete'}
    for name, entry in scenarios.items():
        for side in ('ours', 'baseline'):
            summary = entry[side]
            assert summary['errors'] == 0, (name, side,
                                            summary['first_errors'])
            assert summary['requests'] > 0 and summary['p50_ms'] is not None
        assert 'cyborg' not in entry and 'ratio' not in entry
        assert set(entry['ratio_baseline']) == {
            'rps_ours_over_baseline', 'p50_baseline_over_ours',
            'p99_baseline_over_ours'}
    for side in ('ours', 'baseline'):
        assert scenarios['bind'][side]['requests'] == 3
        delete = scenarios['delete'][side]
        assert delete['requests'] == 3
        # Each deleted ARQ's region was reserved in Placement when the
        # DELETE answered (issue 30: the publish is synchronous).
        assert delete['placement_checked'] == 3
        assert delete['still_offered'] == 0
        assert 0 < delete['placement_put_p50_ms'] <= \
            delete['placement_put_p99_ms']
    # Each Bound ARQ told the Nova stand-in.
    assert result['nova_events'] == 6


@pytest.mark.parametrize('text', ['', 'bind,nope', 'delete'])
def test_api_bench_refuses_unknown_or_unpaired_scenarios(text):
    import argparse
    from bench import api
    with pytest.raises(argparse.ArgumentTypeError):
        api._scenario_list(text)


def test_cyborg_side_is_offered_the_inproc_driver(tmp_path):
    """What bench/cyborg_server.py --inproc-dir does in Cyborg's venv: a
    distribution naming our driver, and a config file selecting it. In a
    clean interpreter (-I: no site-packages, so no cyborg_lite installed)
    oslo.messaging could not load it otherwise; here the entry point is
    read back from the written distribution alone."""
    script = (
        'import importlib.metadata as md, sys\n'
        'sys.path.insert(0, %r)\n'
        'import cyborg_server\n'
        'conf = cyborg_server.offer_inproc_driver(%r)\n'
        'print(open(conf).read().strip().splitlines()[-1])\n'
        'dist = md.distribution("cyborg-bench-inproc")\n'
        'for ep in dist.entry_points:\n'
        '    print(ep.group, ep.name, ep.value)\n'
        % (os.path.join(ROOT, 'bench'), str(tmp_path)))
    proc = subprocess.run([sys.executable, '-I', '-c', script],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        'transport_url = inproc://',
        'oslo.messaging.drivers inproc '
        'cyborg_lite.rpc.inproc:InprocDriver']


def test_sqlite_writers_bench_tiny(tmp_path):
    result = _bench(tmp_path, 'sqlite_writers', '--requests', '6',
                    '--devices', '10', '--concurrency', '2')

    assert result['bench'] == 'sqlite_writers'
    assert set(result['modes']) == {'as-is', 'lock', 'lock+wal'}
    for mode in result['modes'].values():
        for name in ('create_arq', 'create_profile'):
            assert mode[name]['errors'] == 0
            assert mode[name]['requests'] == 6


def test_reaper_gate_bench_tiny(tmp_path):
    result = _bench(tmp_path, 'reaper_gate', '--arqs', '30', '--looks',
                    '3')

    assert result['bench'] == 'reaper_gate'
    assert result['arqs'] == 30
    assert result['indexed_ms'] > 0 and result['without_index_ms'] > 0


def test_list_limit_bench_tiny(tmp_path):
    # The bench itself checks, before timing, that each list's body equals
    # the stdlib read-and-encode of the same rows.
    result = _bench(tmp_path, 'list_limit', '--devices', '20',
                    '--requests', '2')

    assert result['bench'] == 'list_limit'
    assert set(result['lists']) == {'devices', 'deployables', 'arqs'}
    for entry in result['lists'].values():
        assert entry['rows'] == 20
        assert entry['ratio_of_medians'] > 0
        assert entry['ours_ms']['min'] <= entry['ours_ms']['median']


def test_profile_explain_bench_tiny(tmp_path):
    result = _bench(tmp_path, 'profile_explain', '--hosts', '20',
                    '--runs', '2', '--trials', '1')
    assert result['bench'] == 'profile_explain'
    assert {name: entry['blocking'] for name, entry in
            result['profiles'].items()} == {
        'served': [None], 'held': ['in_use'], 'never': ['traits']}
    assert all(entry['limit_ms'] == 200 and entry['explains'] == 2 and
               0 < entry['total_ms_median'] <= entry['total_ms_p95']
               for entry in result['profiles'].values())


def test_profile_explain_bench_on_the_oracles_fleet(tmp_path):
    """The oracle test's 1,000 hosts through the database: each group
    blocked where its oracle says (explain_fleet.PROFILES)."""
    from tests.unit.placement import explain_fleet
    result = _bench(tmp_path, 'profile_explain', '--fleet', 'oracle',
                    '--hosts', '1000', '--runs', '1', '--trials', '1')
    assert result['params']['fleet'] == 'oracle'
    assert [entry['blocking'] for entry in result['profiles'].values()] \
        == [[blocking] for _group, _images, blocking
            in explain_fleet.PROFILES]


@pytest.mark.postgresql
def test_scale_out_bench_tiny(tmp_path):
    result = _bench(tmp_path, 'scale_out', '--devices', '8', '--requests',
                    '6', '--list-requests', '2', '--workers', '1,2',
                    '--concurrency', '2')

    assert result['bench'] == 'scale_out'
    assert set(result['workers']) == {'1', '2'}
    for routes in result['workers'].values():
        assert set(routes) == {'list_devices', 'show_device',
                               'create_profile', 'create_arq'}
        for entry in routes.values():
            assert entry['errors'] == 0 and entry['requests'] > 0
            assert set(entry['cores_busy']) == {
                'api', 'db', 'load_generator', 'machine'}


def test_k8s_slices_bench_tiny(tmp_path):
    result = _bench(tmp_path, 'k8s_slices', '--nodes', '4', '--cards', '2',
                    '--regions', '4', '--change-pct', '10')
    assert result['bench'] == 'k8s_slices'
    assert result['params']['regions'] == 32 and result['slices'] == 4
    rounds = result['rounds']
    assert rounds['first']['created'] == 4
    assert rounds['first']['writes'] == 4
    # An unchanged inventory is one list per node and no write.
    assert rounds['unchanged']['writes'] == 0
    assert rounds['unchanged']['requests'] == 4
    changed = rounds['changed']
    assert changed['changed_regions'] == 3
    assert 1 <= changed['writes'] <= 3 and changed['conflicts'] == 0


def test_k8s_prepare_bench_tiny(tmp_path):
    result = _bench(tmp_path, 'k8s_prepare', '--claims', '2')
    assert result['bench'] == 'k8s_prepare'
    kinds = result['kinds']
    assert set(kinds) == {'plain', 'programming'}
    for kind in kinds.values():
        assert kind['prepare']['requests'] == 2
        assert kind['unprepare']['requests'] == 2
    # Each prepare of the second kind ran one programming job.
    assert kinds['programming']['jobs_succeeded'] == 2


def test_post_cost_bench_tiny(tmp_path):
    # This tree against itself: the plumbing, not a comparison.
    result = _bench(tmp_path, 'post_cost', '--baseline', ROOT,
                    '--posts', '8', '--trials', '1')

    assert result['bench'] == 'post_cost'
    keys = {'profile_1t', 'arq_1t', 'profile_4t', 'arq_4t'}
    for name in ('this', 'baseline'):
        [trial] = result['trials'][name]
        assert os.path.realpath(trial['root']) == os.path.realpath(ROOT)
        assert set(trial['cpu_ms_per_post']) == keys
        assert all(v > 0 for v in trial['cpu_ms_per_post'].values())
    assert set(result['baseline_over_this']) == keys
    # The same code counts about the same calls (an ARQ's vary a little
    # with what the database and caches hold).
    calls = result['python_calls_per_post']
    assert set(calls['this']) == set(calls['baseline']) == {'profile', 'arq'}
    for name, count in calls['this'].items():
        assert count > 100
        assert abs(count - calls['baseline'][name]) < 0.1 * count


def test_signatures_bench_tiny(tmp_path):
    result = _bench(tmp_path, 'signatures', '--size-mb', '1', '--runs', '1')
    assert result['bench'] == 'signatures'
    assert result['params']['image_bytes'] > 1024 * 1024
    [run] = result['runs']
    # Each check ran once and was timed (the facts, not the speeds).
    for field in ('upload_s', 'program_s', 'program_unchecked_s',
                  'verify_at_upload_s', 'verify_at_conductor_s',
                  'check_at_agent_s', 'sha256_pass_s'):
        assert run[field] > 0, field
    assert set(result['pct_of_upload_plus_program']) == {
        'verify_at_upload', 'signature_put_whole', 'verify_at_conductor',
        'check_at_agent', 'both_checks', 'every_check',
        'both_checks_if_each_rehashed'}


def test_api_bench_observability_tiny(tmp_path):
    result = _bench(tmp_path, 'api', '--observability', '--devices', '12',
                    '--requests', '8', '--list-requests', '2', '--binds',
                    '4', '--rounds', '2', '--scrape-interval', '0.2')
    for name, entry in result['scenarios'].items():
        assert entry['on']['errors'] == entry['off']['errors'] == 0, name
        assert 'ratio_on_off' in entry
    assert result['scrapes']['errors'] == []


def test_observability_cost_bench_tiny(tmp_path):
    result = _bench(tmp_path, 'observability_cost', '--devices', '6',
                    '--requests', '8', '--lists', '2', '--binds', '2',
                    '--blocks', '2', '--settle', '0', '--trials', '1')
    (trial,) = result['trials']
    assert set(trial['cpu_ms_per_request']) == {'on', 'off'}
    # Every ARQ the two "on" blocks made was notified: 4 created, and a
    # bind that makes one and moves it twice; the "off" blocks sent
    # nothing.
    assert trial['notifications_sent'] == 2 * (4 + 3)
    assert set(result['throughput_on_over_off']) == {
        'list_devices', 'create_profile', 'create_arq', 'bind'}
    assert result['scrape_bytes'] > 0


def test_observability_cost_bench_tiny_over_http(tmp_path):
    result = _bench(tmp_path, 'observability_cost', '--http', '--devices',
                    '6', '--requests', '8', '--lists', '2', '--binds', '2',
                    '--blocks', '2', '--settle', '0', '--trials', '1')
    (trial,) = result['trials']
    assert trial['notifications_sent'] == 2 * (4 + 3)
    assert set(result['paired_on_over_off']) == {
        'list_devices', 'create_profile', 'create_arq', 'bind'}


def test_ours_server_runs_on_a_tree_without_metrics(conf):
    """bench/api.py --baseline runs bench/ours_server.py on an older
    tree, whose configuration has no [metrics]: it sets only what that
    tree has."""
    import argparse

    from keystoneauth1 import loading as ks_loading
    from oslo_config import cfg

    from bench import ours_server
    from cyborg_lite.conf import opts
    args = argparse.Namespace(
        db='sqlite://', port=1, nova_url='http://127.0.0.1:1',
        no_metrics=True, notifications=None, notifications_url=None,
        placement_url=None)
    assert ours_server.configuration(args, conf)['metrics'] == {
        'enabled': False, 'api_unauthenticated': True}
    # The configuration of a tree from before [metrics].
    older = cfg.ConfigOpts()
    for group, group_opts in opts.list_opts():
        if getattr(group, 'name', group) != 'metrics':
            older.register_opts(group_opts, group=group)
    older.register_opts(ks_loading.get_auth_plugin_conf_options('none'),
                        group='nova')
    overrides = ours_server.configuration(args, older)
    assert 'metrics' not in overrides
    for group in ('database', 'api', 'arq', 'nova'):
        for name, value in overrides[group].items():
            older.set_override(name, value, group=group)


def _first_release_tree(tmp_path):
    """The first release's code (releases.yaml), extracted from this
    clone's history."""
    import yaml
    with open(os.path.join(ROOT, 'releases.yaml')) as f:
        commit = yaml.safe_load(f)['releases'][0]['commit']
    tree = tmp_path / 'first-release'
    tree.mkdir()
    archive = subprocess.run(['git', 'archive', commit], cwd=ROOT,
                             check=True, capture_output=True).stdout
    subprocess.run(['tar', '-x', '-C', str(tree)], input=archive,
                   check=True)
    return str(tree)


def test_api_bench_prepares_the_first_releases_database(tmp_path):
    # bench/api.py --baseline measures an older tree with this tree's
    # bench/ours_server.py: its --child step imports the modules that
    # moved since where that tree has them.
    tree = _first_release_tree(tmp_path)
    db = 'sqlite:///%s' % (tmp_path / 'first.sqlite')
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'bench', 'ours_server.py'),
         '--child', '--root', tree, '--db', db, '--devices', '3',
         '--publish-cards', '2'],
        env=dict(os.environ, PYTHONPATH=tree), cwd=tree,
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert os.path.realpath(result['root']) == os.path.realpath(tree)
    assert result['publish_hosts']
    import sqlite3
    with sqlite3.connect(str(tmp_path / 'first.sqlite')) as conn:
        assert conn.execute('SELECT count(*) FROM deployables').fetchone() \
            == (3,)
        assert conn.execute('SELECT version_num FROM alembic_version'
                            ).fetchone() == ('0015',)


def test_program_trace_bench_tiny(tmp_path):
    result = _bench(tmp_path, 'program_trace', '--requests', '40',
                    '--regions', '4', '--bitstreams', '3', '--seeds', '43,1')
    assert result['bench'] == 'program_trace'
    assert set(result['loads']) == {'default', 'heavy'}
    for load in result['loads'].values():
        choices = load['choices']
        assert set(choices) == {'now', 'first_free', 'optimum', 'now_wait',
                                'optimum_wait'}
        for row in choices.values():
            # Every bitstream asked for is loaded at least once in each
            # seed's trace, and no request is ready before it arrives.
            assert 3 * 2 <= row['reprograms'] <= 40 * 2
            assert 0 <= row['ready_p50_s'] <= row['ready_p95_s']
        assert choices['now']['over_optimum'] == round(
            choices['now']['reprograms'] /
            choices['optimum']['reprograms'], 3)
