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


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('--config-file', required=True)
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--threads', type=int, default=8)
    args = parser.parse_args(argv)

    import cyborg.cmd  # noqa: F401  (selects oslo.service's threading)
    from cyborg.api import app
    from cyborg.common import constants
    from cyborg.common import rpc
    from cyborg.common import service as cyborg_service
    from cyborg.conf import CONF
    import waitress.server

    cyborg_service.prepare_service(['cyborg-bench', '--config-file',
                                    args.config_file])
    if rpc.TRANSPORT is None:
        rpc.init(CONF)
    conductor = cyborg_service.RPCService('cyborg.conductor.manager',
                                          'ConductorManager',
                                          constants.CONDUCTOR_TOPIC)
    conductor.start()
    application = app.load_app()
    server = waitress.server.create_server(
        application, host='127.0.0.1', port=args.port,
        threads=args.threads, clear_untrusted_proxy_headers=True)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    threading.Thread(target=server.run, daemon=True).start()
    print('ready', flush=True)
    stop.wait()
    server.close()
    os._exit(0)   # Cyborg's service threads are not daemons


if __name__ == '__main__':
    sys.exit(main())
