"""prometheus_client's multi-process directory, set up before
prometheus_client is imported (it reads PROMETHEUS_MULTIPROC_DIR once, at
import): the commands that start several processes (cyborg-lite-api's
gunicorn workers, cyborg-lite-conductor's workers) call ``prepare`` first.
"""
import os
import shutil
import tempfile

ENV = 'PROMETHEUS_MULTIPROC_DIR'


def prepare(directory=None):
    """Make (or empty of its value files) the directory and name it in the
    environment, which the worker processes inherit; returns it."""
    if directory:
        if os.path.isdir(directory):
            for name in os.listdir(directory):
                if name.endswith('.db'):
                    os.unlink(os.path.join(directory, name))
        else:
            os.makedirs(directory)
    else:
        directory = tempfile.mkdtemp(prefix='cyborg-lite-metrics-')
    os.environ[ENV] = directory
    return directory


def remove(directory):
    os.environ.pop(ENV, None)
    shutil.rmtree(directory, ignore_errors=True)


def active():
    return bool(os.environ.get(ENV))


def mark_process_dead(pid):
    """A worker exited: its live gauges go (gunicorn's child_exit)."""
    if active():
        from prometheus_client import multiprocess
        multiprocess.mark_process_dead(pid)
