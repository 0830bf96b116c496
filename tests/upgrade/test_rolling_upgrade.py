"""The acceptance test of a rolling upgrade (issue 45), as grenade runs
one: the previous release (releases.yaml), installed from this
repository's history into a venv of its own, runs as separate processes
(API, a conductor, two agents with the fake FPGA driver, the real
Placement) on PostgreSQL and RabbitMQ with bound ARQs, a programmed
region and a Kubernetes claim; then this code takes over one service at
a time with the same config files: the schema, the conductor, the API,
one agent, the other.

At every step programming, binds and cleaning work on both agents (old
and new), nothing bound is lost, and a client hitting the API throughout
never gets a 5xx (nor a refused connection but while the one API process
restarts). At the end the upgrade check passes and what the old release
held frees and cleans on the new one.
"""
import json

import pytest
from packaging import version as pep440

from cyborg_lite.common import version as version_mod
from tests.upgrade import workload as workload_mod

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('upgrade')]


def _steps(cluster):
    """(name, action): the schema, the conductors, the API, then the
    agents one at a time (grenade's order; Nova's and Ironic's docs)."""
    steps = [('schema', cluster.upgrade_schema)]
    for name in cluster.conductor_names + ['api'] + cluster.agent_hosts:
        steps.append((name, lambda name=name: cluster.upgrade(name)))
    return steps


def _works(cluster, work, loop, step):
    """After ``step``: programming, binds and cleaning work on every
    agent, nothing kept is lost, the API answered and no 5xx."""
    try:
        work.exercise()
        work.verify_kept()
        assert loop.answered(step), loop.seen[-5:]
        assert loop.server_errors() == [], cluster.logs('api')
    except AssertionError as exc:
        exc.add_note('after step %r; running the previous release: %s' % (
            step, sorted(n for n, b in cluster.running().items()
                         if b != cluster.new_bin)))
        raise


def _every_service_runs_this_release(cluster):
    """GET /v2/services (2.12): each service up, on this release."""
    services = cluster.call('GET', '/services', 200, headers={
        'OpenStack-API-Version': 'accelerator 2.12'}).json()['services']
    running = {(s['kind'], s['host']): (s['release'], s['state'])
               for s in services}
    wanted = {('conductor', name): (version_mod.VERSION, 'up')
              for name in cluster.conductor_names}
    wanted.update({('agent', host): (version_mod.VERSION, 'up')
                   for host in cluster.agent_hosts})
    assert {k: running.get(k) for k in wanted} == wanted, services
    assert {release for (kind, _h), (release, _s) in running.items()
            if kind == 'api'} == {version_mod.VERSION}, services


def _online_migrations_done(cluster):
    """``cyborg-lite-dbsync online_data_migrations`` exits 0 (nothing
    left), where this code has the command (issue 45's pins branch adds
    it)."""
    usage = cluster.run_new('cyborg-lite-dbsync', 'dbsync', '--help')
    if 'online_data_migrations' not in usage.stdout:
        return
    done = cluster.run_new('cyborg-lite-dbsync', 'dbsync',
                           'online_data_migrations')
    assert done.returncode == 0, done.stdout + done.stderr


def test_one_service_at_a_time_keeps_everything_working(upgrade_cluster):
    cluster = upgrade_cluster
    # The same config files: the previous release's, every option in
    # them one it reads (and this code too).
    assert cluster.options_unknown_to(cluster.old_bin) == {}
    assert cluster.options_unknown_to(cluster.new_bin) == {}
    work = workload_mod.Workload(cluster)
    work.seed()
    loop = workload_mod.ApiLoop(cluster).start()
    try:
        _works(cluster, work, loop, 'old')
        for name, action in _steps(cluster):
            loop.phase = name
            action()
            if name == 'schema':
                # The table is this code's; no service of the previous
                # release writes it (else the "old" services are not).
                assert cluster.query('SELECT kind, host FROM services') \
                    == []
            _works(cluster, work, loop, name)
    finally:
        loop.stop()
    assert set(cluster.running().values()) == {cluster.new_bin}
    assert loop.refused_outside('api') == []

    _every_service_runs_this_release(cluster)
    _online_migrations_done(cluster)
    check = cluster.run_new('cyborg-lite-status',
                            cluster.conductor_names[0],
                            'upgrade', 'check', '--json')
    assert check.returncode == 0, check.stdout + check.stderr
    assert {'Database schema', 'Service releases'} <= {
        c['check'] for c in json.loads(check.stdout)['checks']}
    work.release_kept()


def test_an_agent_older_than_the_previous_release_is_refused(
        upgrade_cluster):
    """The heartbeat an agent of a release before the previous one sends
    (RPC 1.10, the release it runs) is refused by this code's conductor
    with an error naming both releases; the agent is never up (no agents
    row: no scheduler is offered its devices), and its services row says
    what it runs, for the operator's service list and upgrade check."""
    cluster = upgrade_cluster
    if not cluster.schema_upgraded:  # run alone
        cluster.upgrade_schema()
    for name in cluster.conductor_names:
        if cluster.running()[name] != cluster.new_bin:
            cluster.upgrade(name)
    ancient = '2025.2.0'
    assert pep440.parse(ancient) < pep440.parse(version_mod.PREVIOUS_RELEASE)
    with pytest.raises(Exception) as refused:
        workload_mod.conductor_rpc(
            cluster, 'agent_heartbeat', version='1.10',
            hostname='host-ancient', release=ancient,
            rpc_versions={'cyborg-lite-agent': '1.3',
                          'cyborg-lite-conductor': '1.8'})
    message = str(refused.value)
    assert ancient in message and version_mod.PREVIOUS_RELEASE in message
    assert [tuple(r) for r in cluster.query(
        "SELECT host, release FROM services WHERE host = 'host-ancient'")] \
        == [('host-ancient', ancient)]
    assert cluster.query("SELECT hostname FROM agents WHERE hostname = "
                         "'host-ancient'") == []
