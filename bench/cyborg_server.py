"""OpenStack Cyborg 17's API and conductor in one process (Cyborg's venv).

    bench/.cyborg-venv/bin/python bench/cyborg_server.py
        --config-file cyborg.conf --port N [--threads 8]

Run by bench/api.py with the interpreter of the venv it installs
openstack-cyborg==17.0.0 into; imports only Cyborg and its dependencies.
Cyborg's API reaches its conductor over oslo.messaging (device profile
create, ARQ create, ARQ bind are RPC calls); ``fake://`` does not cross
processes, so both run here: the conductor as Cyborg's own
``RPCService`` (threading backend, as cyborg.cmd sets it), the API as
Cyborg's paste pipeline without ``authtoken`` (Cyborg has no
auth_strategy option; noauth is a pipeline without that filter, and its
ContextHook then trusts X-Roles / X-Project-Id), served by waitress with
the same thread count as cyborg_lite's bench server.
"""
import argparse
import os
import signal
import sys
import threading

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PASTE = """[pipeline:main]
pipeline = cors http_proxy_to_wsgi request_id api_v2

[app:api_v2]
paste.app_factory = cyborg.api.app:app_factory

[filter:request_id]
paste.filter_factory = oslo_middleware:RequestId.factory

[filter:cors]
paste.filter_factory =  oslo_middleware.cors:filter_factory
oslo_config_project = cyborg

[filter:http_proxy_to_wsgi]
paste.filter_factory = \
    oslo_middleware.http_proxy_to_wsgi:HTTPProxyToWSGI.factory
"""


def write_paste(directory):
    path = os.path.join(directory, 'api-paste-noauth.ini')
    with open(path, 'w') as f:
        f.write(PASTE)
    return path


def offer_inproc_driver(directory):
    """Make cyborg_lite's ``inproc://`` oslo.messaging driver loadable here.

    oslo.messaging finds drivers by entry point; Cyborg's venv does not
    have cyborg_lite installed, so a one-entry-point distribution is
    written into ``directory`` and it and this repository go on sys.path.
    Only ``cyborg_lite.rpc.inproc`` is imported, and only
    after Cyborg's own imports. Returns a config file selecting it.
    """
    info = os.path.join(directory, 'cyborg_bench_inproc-0.dist-info')
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, 'METADATA'), 'w') as f:
        f.write('Metadata-Version: 2.1\nName: cyborg-bench-inproc\n'
                'Version: 0\n')
    with open(os.path.join(info, 'entry_points.txt'), 'w') as f:
        f.write('[oslo.messaging.drivers]\n'
                'inproc = cyborg_lite.rpc.inproc:InprocDriver\n')
    sys.path[:0] = [directory, REPO]
    # NOTE: a later config file wins; Cyborg's parse_args builds the
    # transport at once, so the URL cannot be overridden afterwards.
    conf = os.path.join(directory, 'inproc.conf')
    with open(conf, 'w') as f:
        f.write('[DEFAULT]\ntransport_url = inproc://\n')
    return conf


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('--config-file', required=True)
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--threads', type=int, default=8)
    parser.add_argument('--server', choices=('cheroot', 'waitress'),
                        default='cheroot')
    parser.add_argument('--inproc-dir',
                        help='use inproc://, its driver offered from here')
    args = parser.parse_args(argv)
    config_files = []
    if args.inproc_dir:
        config_files = ['--config-file', offer_inproc_driver(args.inproc_dir)]

    import serving  # bench/serving.py: this script's directory is on sys.path
    import cyborg.cmd  # noqa: F401  (selects oslo.service's threading)
    from cyborg.api import app
    from cyborg.common import constants
    from cyborg.common import rpc
    from cyborg.common import service as cyborg_service
    from cyborg.conf import CONF

    cyborg_service.prepare_service(['cyborg-bench', '--config-file',
                                    args.config_file] + config_files)
    if rpc.TRANSPORT is None:
        rpc.init(CONF)
    conductor = cyborg_service.RPCService('cyborg.conductor.manager',
                                          'ConductorManager',
                                          constants.CONDUCTOR_TOPIC)
    conductor.start()
    application = app.load_app()
    stop_serving = serving.serve(args.server, application, args.port,
                                 args.threads)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print('ready', flush=True)
    stop.wait()
    stop_serving()
    os._exit(0)   # Cyborg's service threads are not daemons


if __name__ == '__main__':
    sys.exit(main())
