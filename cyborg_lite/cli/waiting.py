"""Poll an object until its ``state`` settles, reporting each change.

Used by ``arq bind --wait`` and ``program create --wait``:
both APIs answer at once and finish the work in the background.
"""
import sys
import time

from cyborg_lite.cli import client as cl_client


def state_reporter(stream=None, label=''):
    """A ``report(old, new)`` writing one line per change (to stderr,
    so ``-f json`` on stdout stays parseable)."""
    stream = stream or sys.stderr

    def report(old, new):
        stream.write('%s%s -> %s\n' % (label, old or '(start)', new))
        stream.flush()
    return report


def wait_for_state(fetch, final_states, timeout, interval=0.5, report=None,
                   clock=time.monotonic, sleep=time.sleep):
    """The object once ``fetch()['state']`` is in ``final_states``.

    Raises ClientError when ``timeout`` seconds pass first.
    """
    deadline = clock() + timeout
    last = None
    while True:
        obj = fetch()
        state = obj.get('state')
        if state != last and report is not None:
            report(last, state)
        last = state
        if state in final_states:
            return obj
        if clock() >= deadline:
            raise cl_client.ClientError(
                'Timed out after %ss waiting; state is still %s'
                % (timeout, state))
        sleep(interval)
