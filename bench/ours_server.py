"""cyborg_lite's API and conductor in one process, for the API bench.

    .venv/bin/python -m bench.ours_server --db sqlite:///x.sqlite
        --port N --nova-url URL [--threads 8]
        [--server cheroot|waitress] [--placement-url URL] [--no-metrics]
        [--notifications DRIVER [--notifications-url URL]]

The same arrangement as cyborg-lite-all-in-one (its HTTP server, cheroot,
in-process ``inproc://`` messaging, noauth, SQLite) minus the agent,
which the API routes measured here do not use. Without
``--placement-url`` there is no inventory sink: a publish (after an ARQ
delete, say) writes nothing anywhere. With it, the conductor publishes
to that Placement as the all-in-one's does (admin token, the compute
node provider created), and first serves the hosts the database asks
to publish (db/publish_requests; bench/api.py seeds them), as its
periodic task would, before it serves HTTP.
``[arq] notifier = nova`` sends the accelerator-request-bound event to
``--nova-url`` (bench/fake_nova.py), as Cyborg does.
``[api] max_limit = 10000`` so that GET /v2/devices returns all rows, as
Cyborg's (unpaged) list does. Metrics are on ([metrics] defaults, GET
/metrics without a token) unless ``--no-metrics``; notifications are off
unless ``--notifications DRIVER`` (bench/api.py ``--observability``).
The database must already be migrated and seeded (bench/seed.py):

    python bench/ours_server.py --child --root TREE --db URL --devices N
        [--publish-cards K]

does that with the code of TREE (run with TREE first on the path,
bench/common.run_in_tree), and requests a publish of the hosts of the
first K cards, as their agents' first reports would have. Both steps
run on older checkouts too (bench/api.py --baseline), so the modules
that moved since the first release are imported where each tree has
them (``_module``).
"""
import argparse
import importlib
import json
import logging
import os
import sys

from bench import serving


# New home first, then where the first release (2026.1.0) had it.
_MOVED = {
    'stop_signals': ('cyborg_lite.cmd.stop_signals',
                     'cyborg_lite.common.stop_signals'),
    'placement_server': ('cyborg_lite.cmd.placement_server',
                         'cyborg_lite.common.placement_server'),
    'session': ('cyborg_lite.db.sql.session', 'cyborg_lite.db.session'),
    'notifications': ('cyborg_lite.notifications.events',
                      'cyborg_lite.common.notifications'),
}


def _module(concept):
    """The module of ``concept`` in the cyborg_lite tree under test,
    wherever that tree keeps it; ImportError when it has none."""
    names = _MOVED[concept]
    for name in names:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name is None or not name.startswith(e.name):
                raise
    raise ImportError('the tree under test has none of %s' % (names,))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ['--child']:
        print(json.dumps(prepare_db(argv[1:])))
        return 0
    parser = argparse.ArgumentParser()
    parser.add_argument('--db', required=True)
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--nova-url', required=True)
    parser.add_argument('--threads', type=int, default=8)
    parser.add_argument('--server', choices=serving.SERVERS,
                        default='cheroot')
    parser.add_argument('--no-metrics', action='store_true',
                        help='[metrics]enabled = false: no request metrics '
                             'and no /metrics')
    parser.add_argument('--notifications', metavar='DRIVER',
                        help='[oslo_messaging_notifications]driver (off '
                             'when not given)')
    parser.add_argument('--notifications-url', metavar='URL',
                        help='[oslo_messaging_notifications]transport_url '
                             '(the RPC one, inproc://, when not given)')
    parser.add_argument('--placement-url',
                        help='publish inventory to this Placement')
    args = parser.parse_args(argv)

    from keystoneauth1 import loading as ks_loading

    from cyborg_lite.api import deploy
    from cyborg_lite.common import config
    from cyborg_lite.conductor import service
    from cyborg_lite.conf import CONF

    config.parse_args([], default_config_files=[])
    CONF.register_opts(ks_loading.get_auth_plugin_conf_options('none'),
                       group='nova')
    if args.notifications and not _has_notifications():
        parser.error('--notifications: the cyborg_lite tree under test '
                     'sends no notifications')
    if args.placement_url:
        CONF.register_opts(
            ks_loading.get_auth_plugin_conf_options('admin_token'),
            group='placement')
    overrides = configuration(args, CONF)
    for group, values in overrides.items():
        for name, value in values.items():
            CONF.set_override(name, value, group=group)
    # NOTE: parse_args set logging up before default_log_levels was
    # overridden: its levels are applied here.
    for name_level in overrides[None]['default_log_levels']:
        name, _, level = name_level.partition('=')
        logging.getLogger(name).setLevel(level)

    conductor = service.ConductorService(CONF)
    conductor.start()
    if args.placement_url:
        conductor.manager.publisher.publish_requested()
    stop_serving = serving.serve(args.server, deploy.loadapp(CONF),
                                 args.port, args.threads)
    stops = _module('stop_signals').StopSignals()
    print('ready', flush=True)
    stops.wait()
    stop_serving()
    conductor.stop()
    return 0


def configuration(args, conf):
    """{group: {option: value}} this server sets on ``conf``, the
    configuration of the tree under test."""
    overrides = {
        None: {'host': 'bench-ours', 'transport_url': 'inproc://',
               'default_log_levels': ['cyborg_lite=WARNING',
                                      'keystoneauth=WARNING',
                                      'oslo_messaging=WARNING',
                                      'urllib3=WARNING']},
        'database': {'connection': args.db},
        'api': {'host': '127.0.0.1', 'port': args.port,
                'auth_strategy': 'noauth', 'max_limit': 10000},
        'arq': {'notifier': 'nova'},
        'nova': {'auth_type': 'none', 'endpoint_override': args.nova_url},
    }
    # NOTE: bench/api.py --baseline runs this file on an older tree,
    # whose configuration may have no [metrics] (nothing to turn off
    # there).
    if 'metrics' in conf:
        overrides['metrics'] = {'enabled': not args.no_metrics,
                                'api_unauthenticated': True}
    if args.notifications:
        overrides['oslo_messaging_notifications'] = {
            'driver': [args.notifications],
            'transport_url': args.notifications_url}
    if args.placement_url:
        overrides['placement'] = {
            'auth_type': 'admin_token',
            'token': _module('placement_server').TOKEN,
            'endpoint_override': args.placement_url,
            'create_compute_node_rp': True}
    return overrides


def _has_notifications():
    try:
        _module('notifications')
    except ImportError:
        return False
    return True


def prepare_db(argv):
    """Migrate and seed ``--db`` with the code tree ``--root``, and
    request a publish of the hosts of the first ``--publish-cards``
    cards; where cyborg_lite came from (common.run_in_tree checks it)."""
    parser = argparse.ArgumentParser()
    parser.add_argument('--root', required=True)
    parser.add_argument('--db', required=True)
    parser.add_argument('--devices', type=int, required=True)
    parser.add_argument('--publish-cards', type=int, default=0)
    args = parser.parse_args(argv)
    sys.path.insert(0, args.root)
    from bench import common
    from bench import seed
    from cyborg_lite.common import config
    from cyborg_lite.conf import CONF
    from cyborg_lite.db import migration
    from cyborg_lite.db import publish_requests
    session = _module('session')
    config.parse_args([], default_config_files=[])
    common.quiet()
    CONF.set_override('connection', args.db, group='database')
    migration.upgrade()
    seed.seed_ours(args.db, args.devices)
    hosts = sorted({seed.host_of(i) for i in range(args.publish_cards)})
    with session.writer(args.db) as s:
        for hostname in hosts:
            publish_requests.add(s, hostname, 'bench: reported')
    session.dispose_all()
    import cyborg_lite
    return {'root': os.path.dirname(os.path.dirname(cyborg_lite.__file__)),
            'publish_hosts': hosts}


if __name__ == '__main__':
    sys.exit(main())
