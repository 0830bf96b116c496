"""The real CLI entry points run in the test's own process.

A subprocess of ``openstack`` costs 2-3 s of CPU (``cyborg-lite`` about
one) in imports alone; the CLI tests run hundreds. Here the same
``main(argv)`` the console script calls runs with the environment, argv,
stdin, stdout and stderr it would have in its own process, and what it
changes of the process (logging, warnings filters) is put back after.
The console scripts themselves (entry points, the real process's exit
code, a terminal) stay tested as processes: tests/functional/
test_console_scripts.py, cli/bitstream_cli.py's ``run_on_tty`` and
``run_binary``, api/test_real_keystone.py, test_readme_tour.py (both
``openstack`` and ``cyborg-lite``, in a shell).

The API under test serves from threads of this process, and may log
while a command runs: only what the command's own thread writes is its
output; the rest goes where it went before.
"""
import contextlib
import importlib
import io
import logging
import os
import sys
import threading
import warnings
from unittest import mock

ENTRY_POINTS = {
    'cyborg-lite': 'cyborg_lite.cli.app:main',
    'openstack': 'openstackclient.shell:main',
}


class _ThreadStream(io.TextIOBase):
    """A stream that keeps what one thread writes and passes every other
    thread's writes on to ``passthrough``."""

    def __init__(self, passthrough, encoding='utf-8'):
        super().__init__()
        self._owner = threading.get_ident()
        self._passthrough = passthrough
        self._kept = io.BytesIO()
        self._encoding = encoding
        self.buffer = _ThreadBuffer(self)

    @property
    def encoding(self):
        return self._encoding

    def isatty(self):
        return False  # a pipe, as subprocess.run(capture_output=True)

    def writable(self):
        return True

    def write(self, text):
        if threading.get_ident() != self._owner:
            return self._passthrough.write(text)
        self._kept.write(text.encode(self._encoding, 'replace'))
        return len(text)

    def flush(self):
        pass

    def value(self):
        return self._kept.getvalue().decode(self._encoding, 'replace')


class _ThreadBuffer:
    """``sys.stdout.buffer`` of a _ThreadStream (binary downloads to -)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, data):
        if threading.get_ident() != self._stream._owner:
            return len(data)
        return self._stream._kept.write(data)

    def flush(self):
        pass


def _loggers():
    manager = logging.Logger.manager
    return [logging.getLogger()] + [
        lg for lg in list(manager.loggerDict.values())
        if isinstance(lg, logging.Logger)]


@contextlib.contextmanager
def _logging_kept():
    """Put back every logger's level, handlers, propagation and disabled
    flag (cliff and osc-lib configure the root logger on each run)."""
    saved = [(lg, lg.level, list(lg.handlers), lg.propagate, lg.disabled)
             for lg in _loggers()]
    known = {id(lg) for lg, *_ in saved}
    disable = logging.root.manager.disable
    try:
        yield
    finally:
        # NOTE: setLevel only where the level changed: each call empties
        # the level cache of every logger (some thousand here).
        for lg in _loggers():
            if id(lg) not in known:
                lg.handlers[:] = []
                if lg.level != logging.NOTSET:
                    lg.setLevel(logging.NOTSET)
        for lg, level, handlers, propagate, disabled in saved:
            if lg.level != level:
                lg.setLevel(level)
            lg.handlers[:] = handlers
            lg.propagate = propagate
            lg.disabled = disabled
        logging.disable(disable)


def _entry_point(program):
    module, name = ENTRY_POINTS[program].split(':')
    return getattr(importlib.import_module(module), name)


def _forget_osc_clients():
    """openstackclient makes each plugin's client once per process and
    keeps it on osc-lib's ClientManager class (a ClientCache, set up at
    import): a new process would make them anew, for its own endpoint."""
    clientmanager = sys.modules.get('osc_lib.clientmanager')
    if clientmanager is None:
        return
    for value in vars(clientmanager.ClientManager).values():
        if isinstance(value, clientmanager.ClientCache):
            value._handle = None


def run(program, args, env, input=None):
    """(exit code, stdout, stderr) of ``program args`` run as its console
    script would, with exactly ``env`` as its environment."""
    main = _entry_point(program)
    _forget_osc_clients()
    out = _ThreadStream(sys.stdout)
    err = _ThreadStream(sys.stderr)
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.dict(os.environ, env, clear=True))
        stack.enter_context(mock.patch.object(
            sys, 'argv', [os.path.join(os.path.dirname(sys.executable),
                                       program)] + list(args)))
        stack.enter_context(mock.patch.object(
            sys, 'stdin', io.StringIO(input or '')))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        stack.enter_context(warnings.catch_warnings())
        stack.enter_context(_logging_kept())
        try:
            rc = main(list(args))
        except SystemExit as exit_:
            rc = _exit_status(exit_.code, err)
    return rc or 0, out.value(), err.value()


def _exit_status(code, err):
    """What the interpreter makes of ``sys.exit(code)``."""
    if code is None or isinstance(code, int):
        return code
    err.write('%s\n' % code)
    return 1
