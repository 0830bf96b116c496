"""Set up and serve a real Keystone's WSGI application on a loopback port.

Run by the Python that has keystone installed (tests/real_keystone.py), not by
ours: it imports keystone and the standard library only.

    python keystone_serve.py KEYSTONE_CONF PORT [STAGES]

STAGES (JSON) is a list of stages, each a list of ``keystone-manage``
command lines (without ``--config-file``): the commands of a stage run side
by side, a stage after the one before succeeded, then the server starts.
Each command is keystone-manage's own ``main`` in a child forked after
keystone is imported: the import is 3-4 s of CPU a process, most of what
a command costs.
"""
import json
import os
import sys
import traceback
from wsgiref import simple_server


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


def _manage(conf_file, args):
    """Fork keystone-manage ``args``; its pid."""
    pid = os.fork()
    if pid:
        return pid
    rc = 1
    try:
        from keystone.cmd import manage
        sys.argv = ['keystone-manage', '--config-file', conf_file] + args
        rc = manage.main() or 0
    except SystemExit as exit_:
        rc = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)


def _run_stages(conf_file, stages):
    for stage in stages:
        pids = {_manage(conf_file, args): args for args in stage}
        failed = []
        for pid, args in pids.items():
            _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                failed.append('keystone-manage %s: exit status %d' % (
                    args[0], os.waitstatus_to_exitcode(status)))
        if failed:
            sys.exit('\n'.join(failed))


def main():
    # NOTE: this file's folder (tests/) comes first on sys.path; its
    # modules are not Keystone's.
    del sys.path[0]
    conf_file, port = sys.argv[1], int(sys.argv[2])
    stages = json.loads(sys.argv[3]) if len(sys.argv) > 3 else []
    # NOTE: keystone parses sys.argv as its own command line.
    del sys.argv[1:]
    # NOTE: imported before the fork, so each command's child has them;
    # neither configures anything at import.
    from keystone.cmd import manage  # noqa: F401
    from keystone.server.flask import core
    _run_stages(conf_file, stages)
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
