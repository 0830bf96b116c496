"""Who hands the queued notifications to oslo.messaging's Notifier.

Both senders keep the same queue (at most ``QUEUE_LIMIT``; past it the
oldest go, counted) and drain it from one thread, in order, so a broker
outage delays notifications but never blocks or fails a transition.

- ``ProcessSender`` (a broker's transport): the Notifier runs in a child
  process of its own (notifications/child.py). RabbitMQ's driver
  spends about 0.3 ms of CPU on each notification (kombu's publish and
  the publisher confirm oslo.messaging always asks for); in the service's
  process that halved the throughput of ARQ creation (one notification a
  request), and another thread cannot give it back (one GIL). This
  process only pickles each batch onto a pipe.
- ``ThreadSender``: the Notifier runs on a thread of this process. What
  oslo.messaging delivers inside a process needs it: the ``inproc://``
  transport (the all-in-one's; a listener must be in the same process)
  and the ``test`` driver.
"""
import collections
import logging
import os
import pickle
import struct
import subprocess
import sys
import threading
import time

LOG = logging.getLogger(__name__)

# Notifications waiting to be sent; past it the oldest go.
QUEUE_LIMIT = 10000
# The sending thread sends what is queued this often, sooner when
# WAKE_AT are waiting or a flush asks: a batch costs this process about
# 0.1 ms besides its notifications (the GIL's hand-overs, a pipe's write
# and read), which batches taken as soon as the last one went (a few
# notifications each, on a busy API) paid again and again.
SEND_INTERVAL = 0.2
WAKE_AT = 1024
# A child that died is started again at most this often.
RESTART_INTERVAL = 1.0
_FRAME = struct.Struct('>I')
# What the child says once its Notifier is built.
READY = b'ready\n'


class QueuedSender:
    """A queue of (context dict, Event) and the one thread draining it
    into ``_drain() -> (sent, failed)``."""

    def __init__(self):
        # NOTE: imported here, in the process that sends (a gunicorn
        # worker), not by the commands that import this module before
        # they set up prometheus_client's multi-process mode.
        from cyborg_lite.metrics import counted as metrics
        self.queue = collections.deque()
        self.dropped = 0
        self.sent = 0
        self.failed = 0
        self._counters = {outcome: metrics.NOTIFICATIONS.labels(outcome)
                          for outcome in metrics.NOTIFICATION_OUTCOMES}
        self._busy = False
        # flush() calls waiting: the thread sends at once for them.
        self._flushing = 0
        self._wake = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='cyborg-lite-notifications')
        self._thread.start()

    def put(self, item):
        # NOTE: no lock on the way of a request, as a rule: a deque's
        # append and len are atomic; the limit and the wake-up may be off
        # by the few puts racing this one (the thread also looks every
        # SEND_INTERVAL).
        queue = self.queue
        if len(queue) >= QUEUE_LIMIT:
            with self._wake:
                if len(queue) >= QUEUE_LIMIT:
                    queue.popleft()
                    self.drop(1, 'could not be sent fast enough')
        queue.append(item)
        if len(queue) == WAKE_AT:
            with self._wake:
                self._wake.notify()

    def drop(self, count, why):
        """Count ``count`` notifications as dropped; said in the log at
        the 1st, 10th, 100th and every 1000th."""
        before = self.dropped
        self.dropped += count
        self._counters['dropped'].inc(count)
        if any(before < mark <= self.dropped for mark in (1, 10, 100)) or (
                self.dropped // 1000 > before // 1000):
            LOG.error('Notifications %s; %d dropped so far', why,
                      self.dropped)

    def _run(self):
        while True:
            with self._wake:
                self._wake.wait_for(self._send_now, SEND_INTERVAL)
                if not self.queue:
                    continue
                self._busy = True
            try:
                sent, failed = self._drain()
            except Exception:
                # NOTE: the thread must outlive a bug, or every later
                # notification would wait in the queue for ever.
                LOG.exception('Notifications could not be sent')
                sent = failed = 0
            # NOTE: counted once a batch, not once a notification.
            self._count(sent, failed)
            with self._wake:
                self._busy = False
                self._wake.notify_all()

    def _send_now(self):
        return len(self.queue) >= WAKE_AT or (
            self._flushing and bool(self.queue))

    def _drain(self):
        """Send what is queued; (sent, failed)."""
        raise NotImplementedError

    def _count(self, sent, failed):
        self.sent += sent
        self.failed += failed
        if sent:
            self._counters['sent'].inc(sent)
        if failed:
            self._counters['failed'].inc(failed)

    def give_up(self):
        """Drop (and count) what is still queued; how many."""
        with self._wake:
            left = len(self.queue)
            self.queue.clear()
            if left:
                self.drop(left, 'were still queued at stop')
        return left

    def flush(self, timeout=10):
        """Wait until everything queued so far was handed to the driver
        (tests, and a service stopping)."""
        with self._wake:
            self._flushing += 1
            try:
                self._wake.notify_all()
                return self._wake.wait_for(
                    lambda: not self.queue and not self._busy, timeout)
            finally:
                self._flushing -= 1

    def wait_started(self):
        """Block until what sends is ready to; whether it is."""
        return True

    def close(self, timeout):
        """Let go of what sends (after ``flush``)."""

    def forget_after_fork(self):
        """In a forked child: let go of the parent's resources without
        touching the parent's use of them."""


class ThreadSender(QueuedSender):
    """The Notifier called from this process's sending thread, through
    ``send(notifier, ctxt, event, data) -> bool``."""

    def __init__(self, notifier, send):
        self.notifier = notifier
        self._send = send
        super().__init__()

    def _drain(self):
        # NOTE: one at a time off the queue (a deque's popleft is
        # atomic), so what a stop gives up on is still counted there.
        sent = failed = 0
        while True:
            try:
                ctxt, event = self.queue.popleft()
            except IndexError:
                return sent, failed
            if self._send(self.notifier, ctxt, event.event, event.data):
                sent += 1
            else:
                failed += 1


class ProcessSender(QueuedSender):
    """The Notifier in a child process (notifications/child.py),
    fed batches over its stdin and answering ``sent failed`` for each on
    its stdout.

    ``setup`` is what the child needs to build the Notifier (see
    notification_child.main). A child that dies is started again (at most
    once a ``RESTART_INTERVAL``); the batch it held is counted as dropped,
    though some of it may have gone. The child sends what it was given
    before it exits, when this process closes the pipe or dies."""

    def __init__(self, setup, stderr=None):
        self._setup = setup
        self._stderr = stderr
        self._proc = None
        self._started_at = None
        # The child whose "ready" line was read.
        self._ready_proc = None
        self._ready_lock = threading.Lock()
        try:
            # NOTE: now, so the first batch does not wait for it; a
            # failure is the sending thread's to retry.
            self._child()
        except OSError as exc:
            LOG.error('The notification sender could not start: %s', exc)
            self._proc = None
        super().__init__()

    @property
    def child_pid(self):
        proc = self._proc
        return None if proc is None else proc.pid

    def _drain(self):
        with self._wake:
            batch = list(self.queue)
            self.queue.clear()
        try:
            frame = _frame([(ctxt, event.event, event.data)
                            for ctxt, event in batch])
        except Exception:
            LOG.exception('Notifications could not be serialized')
            return 0, len(batch)
        try:
            proc = self._child()
            answer = b''
            if self._await_ready(proc):
                proc.stdin.write(frame)
                proc.stdin.flush()
                answer = proc.stdout.readline()
        except (OSError, ValueError) as exc:
            # NOTE: OSError: a pipe broken under us; ValueError: closed by
            # ``close`` at stop.
            answer = b''
            LOG.debug('Notification sender pipe: %s', exc)
        counts = _counts(answer)
        if counts is None:
            self._lost_child(len(batch))
            return 0, 0
        return counts

    def _child(self):
        if self._proc is not None and self._proc.poll() is not None:
            # NOTE: died while idle: nothing of ours was in it.
            LOG.warning('The notification sender exited (status %s); '
                        'started again', self._proc.returncode)
            _close_pipes(self._proc)
            self._proc = None
        if self._proc is not None:
            return self._proc
        if self._started_at is not None:
            wait = self._started_at + RESTART_INTERVAL - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        self._started_at = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, '-m', 'cyborg_lite.notifications.child'],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr)
        _write_frame(proc.stdin, self._setup)
        self._proc = proc
        return proc

    def _await_ready(self, proc):
        """Whether ``proc`` built its Notifier (said "ready"); False when
        it died first (its error is in its log)."""
        with self._ready_lock:
            if proc is not self._ready_proc:
                if proc.stdout.readline() != READY:
                    return False
                self._ready_proc = proc
            return True

    def wait_started(self):
        proc = self._proc
        try:
            return proc is not None and self._await_ready(proc)
        except (OSError, ValueError):
            return False

    def _lost_child(self, count):
        proc, self._proc = self._proc, None
        status = None if proc is None else _end(proc, 5)
        self.drop(count, 'were lost with their sending process (exit '
                  'status %s); it is started again' % (status,))

    def close(self, timeout):
        """Close the child's stdin: it sends what it holds and exits; after
        ``timeout`` it is killed."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _end(proc, timeout)

    def forget_after_fork(self):
        proc, self._proc = self._proc, None
        if proc is not None:
            # NOTE: only this process's copies of the pipes' descriptors
            # (the parent's child must see its stdin end when the parent
            # closes it), not through the file objects, whose locks the
            # parent's sending thread may have held at the fork.
            for pipe in (proc.stdin, proc.stdout):
                try:
                    os.close(pipe.raw.fileno())
                except (OSError, ValueError):
                    pass


def _end(proc, timeout):
    """Close ``proc``'s stdin (it sends what it holds and exits), wait
    ``timeout`` seconds, then kill it; its exit status."""
    # NOTE: stdout stays open until the child is gone: the sending thread
    # may be reading it, and closing a file another thread reads waits
    # for that read.
    try:
        proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        if timeout:
            LOG.warning('The notification sender did not exit in %s s; '
                        'killed', timeout)
        proc.kill()
        proc.wait()
    _close_pipes(proc)
    return proc.returncode


def _close_pipes(proc):
    for pipe in (proc.stdin, proc.stdout):
        try:
            pipe.close()
        except OSError:
            pass


def _frame(obj):
    # NOTE: pickle, on a pipe between this process and the child it
    # started: nobody else can write to it.
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _FRAME.pack(len(data)) + data


def _write_frame(pipe, obj):
    pipe.write(_frame(obj))
    pipe.flush()


def _counts(answer):
    """(sent, failed) of the child's answer line; None when it is not
    one (the child died, or broke the protocol: it is started again)."""
    parts = answer.split()
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        if answer:
            LOG.error('The notification sender answered %r; started '
                      'again', answer[:200])
        return None
    return int(parts[0]), int(parts[1])


def read_frame(pipe):
    """The next object written by ``_write_frame``; None at the end."""
    head = pipe.read(_FRAME.size)
    if len(head) < _FRAME.size:
        return None
    (size,) = _FRAME.unpack(head)
    data = pipe.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


def register_messaging_opts(conf):
    """Register every oslo.messaging option on ``conf`` (as oslo.messaging
    would on making a transport); [(group, options)], group None for
    DEFAULT."""
    from oslo_messaging import opts
    groups = [(None if group in (None, 'DEFAULT') else group, group_opts)
              for group, group_opts in opts.list_opts()]
    for group, group_opts in groups:
        conf.register_opts(group_opts, group=group)
    return groups


def messaging_values(conf):
    """{group: {option: value}} of every oslo.messaging option in
    ``conf`` (group None for DEFAULT), for a child process to build the
    same transport."""
    return {group: {opt.dest: (conf if group is None else conf[group])[
                opt.dest] for opt in group_opts}
            for group, group_opts in register_messaging_opts(conf)}
