"""Loaded by Python at start-up when this directory is on PYTHONPATH (see
tests/functional/console.py): at exit, writes the names of every module
the process has imported to $CYBORG_LITE_TEST_MODULES_DIR/<pid>."""
import atexit
import os
import sys


def _dump():
    directory = os.environ.get('CYBORG_LITE_TEST_MODULES_DIR')
    if directory:
        with open(os.path.join(directory, str(os.getpid())), 'w') as f:
            f.write('\n'.join(sorted(sys.modules)))


atexit.register(_dump)
