"""cyborg_lite: accelerator management in the style of OpenStack Cyborg.

cyborg_lite runs on native threads only. Importing this package (which
Python does before any of its modules) makes two choices for the whole
process, unless something imported eventlet before us (a host process
that runs on it keeps it):

- oslo.service's threading backend, instead of its eventlet default that
  oslo.messaging would load on import;
- ``import eventlet`` fails as if it were not installed. oslo.service
  depends on it, so it is installed, and futurist and oslo.utils import it
  whenever they can: each service start printed eventlet's deprecation
  warning (and a fork warning per conductor worker) although nothing here
  uses it. Without it they take their plain-threading paths.
"""
import importlib.abc
import sys

_BLOCKED = 'eventlet'


class _NoEventlet(importlib.abc.MetaPathFinder):
    """Makes ``import eventlet`` (and its submodules) an ImportError."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == _BLOCKED or fullname.startswith(_BLOCKED + '.'):
            raise ModuleNotFoundError('cyborg_lite runs without eventlet',
                                      name=fullname)
        return None


def _run_on_threads():
    if _BLOCKED not in sys.modules and not any(
            isinstance(f, _NoEventlet) for f in sys.meta_path):
        sys.meta_path.insert(0, _NoEventlet())
    from oslo_service import backend
    # A hook, not init_backend(): the backend (with oslo.concurrency and
    # cotyledon) is loaded only by a process that uses oslo.service.
    backend.register_backend_default_hook(
        lambda: backend.BackendType.THREADING)


_run_on_threads()
