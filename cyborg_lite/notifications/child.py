"""The process that sends a service's notifications (started by
notifications/senders.ProcessSender; not a command of its own).

On stdin, frames from its parent: first the setup (``publisher_id``,
``conf``, the parent's oslo.messaging options, and optionally
``log_level`` and ``stop_timeout``), then
batches of (context dict, event, data). For each batch it calls the
Notifier once a notification, in order, then answers ``sent failed`` on
a line of stdout (after a first line, ``ready``, once the Notifier is
built).

It outlives its parent only to send what it was given: at the end of
stdin (the parent stopping, or killed) it finishes the batch at hand and
exits, and once the parent is gone a broker that does not answer holds it
at most ``stop_timeout`` seconds (``notifications.STOP_TIMEOUT``). SIGINT
and SIGTERM are ignored, so a Ctrl-C or a service manager's stop
reaching the whole process group leaves the parent to close the pipe
once it has queued its last notification.
"""
import logging
import os
import signal
import sys
import threading
import time

from oslo_config import cfg

from cyborg_lite.notifications import events as notifications
from cyborg_lite.notifications import senders as notification_senders

LOG = logging.getLogger('cyborg_lite.notification_child')
ORPHAN_CHECK_INTERVAL = 1.0


def build_notifier(setup):
    """The Notifier the parent's options describe."""
    import oslo_messaging as messaging
    conf = cfg.ConfigOpts()
    conf([], project='cyborg-lite', default_config_files=[],
         default_config_dirs=[])
    notification_senders.register_messaging_opts(conf)
    for group, values in setup['conf'].items():
        for name, value in values.items():
            conf.set_override(name, value, group=group)
    transport = messaging.get_notification_transport(conf)
    return notifications.make_notifier(transport, setup['publisher_id'])


def send_batch(notifier, batch):
    """(sent, failed) of sending ``batch``'s notifications in order."""
    sent = sum(notifications.send(notifier, ctxt, event, data)
               for ctxt, event, data in batch)
    return sent, len(batch) - sent


def _exit_when_orphaned(parent, timeout):
    """Exit ``timeout`` seconds after ``parent`` is gone (this process
    reparented), whatever the Notifier is waiting for."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_CHECK_INTERVAL)
    time.sleep(timeout)
    LOG.error('Parent process %d gone %s s ago and notifications still '
              'not sent; exiting', parent, timeout)
    os._exit(1)


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    stdin = sys.stdin.buffer
    # NOTE: stdout is the answers' channel only: what a library prints
    # goes to stderr.
    stdout = os.fdopen(os.dup(sys.stdout.fileno()), 'wb')
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    setup = notification_senders.read_frame(stdin)
    if setup is None:
        return 0
    logging.basicConfig(
        level=setup.get('log_level', logging.WARNING), stream=sys.stderr,
        format='%(asctime)s %(process)d %(levelname)s %(name)s '
               '[notifications] %(message)s')
    threading.Thread(target=_exit_when_orphaned, daemon=True,
                     args=(os.getppid(), setup.get(
                         'stop_timeout', notifications.STOP_TIMEOUT))).start()
    try:
        notifier = build_notifier(setup)
    except Exception:
        LOG.exception('The Notifier could not be built')
        return 1
    stdout.write(notification_senders.READY)
    stdout.flush()
    while True:
        batch = notification_senders.read_frame(stdin)
        if batch is None:
            return 0
        sent, failed = send_batch(notifier, batch)
        try:
            stdout.write(b'%d %d\n' % (sent, failed))
            stdout.flush()
        except OSError:
            # NOTE: the parent is gone; what it gave was sent.
            return 0


if __name__ == '__main__':
    sys.exit(main())
