"""Serve a real Keystone's WSGI application on a loopback port.

Run by the Python that has keystone installed (tests/real_keystone.py), not by
ours: it imports keystone and the standard library only.

    python keystone_serve.py KEYSTONE_CONF PORT
"""
import sys
from wsgiref import simple_server


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


def main():
    # NOTE: this file's folder (tests/) comes first on sys.path; its
    # modules are not Keystone's.
    del sys.path[0]
    conf_file, port = sys.argv[1], int(sys.argv[2])
    # NOTE: keystone parses sys.argv as its own command line.
    del sys.argv[1:]
    from keystone.server.flask import core
    app = core.initialize_application(name='public',
                                      config_files=[conf_file])
    # NOTE: one request at a time: Keystone on SQLite answers 500
    # ("database is locked") to concurrent writes, and nothing here waits
    # on another request to Keystone while holding one.
    httpd = simple_server.make_server('127.0.0.1', port, app,
                                      handler_class=_QuietHandler)
    print('ready', flush=True)
    httpd.serve_forever()


if __name__ == '__main__':
    main()
