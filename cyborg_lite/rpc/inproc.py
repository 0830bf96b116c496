"""``inproc://``: oslo.messaging's in-memory driver, woken on delivery.

The all-in-one runs its API, conductor and agent in one process, where
messages never need to leave it. oslo.messaging's ``fake://`` driver does
that, but it is written for unit tests: its listener sleeps 50 ms between
looks at its queues, so every cast and call waited 25 ms on average
before a server saw it (half of a bind's latency in bench/api.py).

``inproc://`` is that driver (its exchanges, queues, replies and
semantics: built on ``impl_fake``, pinned by
tests/unit/rpc/test_inproc.py) with two changes: a listener
waits on a condition each delivery notifies, and a notification no
listener in the process reads is neither kept nor wakes anyone (fake://
keeps each one for ever: a leak in a long-running all-in-one, and each
woke every RPC listener, which was most of a notification's cost). Like ``fake://``, it never
crosses a process; RabbitMQ is the transport between processes.
"""
import threading
import time

import oslo_messaging
from oslo_messaging._drivers import base
from oslo_messaging._drivers import impl_fake

# A listener still looks every so often (what fake:// does always), so a
# wake-up lost to a bug would cost latency, never a message.
_IDLE_LOOK_S = 1.0


class _NotificationListeners:
    """How many listeners read each (exchange, topic) of notifications."""

    def __init__(self):
        self._lock = threading.Lock()
        self._count = {}

    def add(self, keys, step=1):
        with self._lock:
            for key in keys:
                self._count[key] = self._count.get(key, 0) + step

    def __contains__(self, key):
        # NOTE: a dict read needs no lock.
        return self._count.get(key, 0) > 0


NOTIFICATION_LISTENERS = _NotificationListeners()


class _Deliveries:
    """How many messages were delivered, and a condition to wait for more."""

    def __init__(self):
        self._cond = threading.Condition()
        self._count = 0

    @property
    def count(self):
        with self._cond:
            return self._count

    def delivered(self):
        with self._cond:
            self._count += 1
            self._cond.notify_all()

    def wait_for_more_than(self, seen, timeout):
        with self._cond:
            if self._count == seen:
                self._cond.wait(timeout)


DELIVERIES = _Deliveries()


class _Exchange(impl_fake.FakeExchange):
    def deliver_message(self, *args, **kwargs):
        super().deliver_message(*args, **kwargs)
        DELIVERIES.delivered()


class _ExchangeManager(impl_fake.FakeExchangeManager):
    # NOTE: its own exchanges, apart from fake://'s (class attributes).
    _exchanges_lock = threading.Lock()
    _exchanges = {}

    def get_exchange(self, name):
        if name is None:
            name = self._default_exchange
        with self._exchanges_lock:
            return self._exchanges.setdefault(name, _Exchange(name))


class _Listener(impl_fake.FakeListener):
    _notification_keys = ()

    def listen_for_notifications(self, keys):
        self._notification_keys = tuple(keys)
        NOTIFICATION_LISTENERS.add(self._notification_keys)
        return self

    @base.batch_poll_helper
    def poll(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._stopped.is_set():
            # NOTE: counted before looking, so a message delivered after
            # the look makes the wait below return at once.
            seen = DELIVERIES.count
            message = self._take()
            if message is not None:
                return message
            pause = _IDLE_LOOK_S
            if deadline is not None:
                pause = min(pause, deadline - time.monotonic())
                if pause <= 0:
                    break
            DELIVERIES.wait_for_more_than(seen, pause)
        return None

    def _take(self):
        for target in self._targets:
            exchange = self._exchange_manager.get_exchange(target.exchange)
            ctxt, message, reply_q, requeue = exchange.poll(target,
                                                            self._pool)
            if message is not None:
                return impl_fake.FakeIncomingMessage(ctxt, message, reply_q,
                                                     requeue)
        return None

    def stop(self):
        if not self._stopped.is_set() and self._notification_keys:
            NOTIFICATION_LISTENERS.add(self._notification_keys, -1)
        super().stop()
        DELIVERIES.delivered()


class InprocDriver(impl_fake.FakeDriver):
    """The ``inproc`` entry point of ``oslo.messaging.drivers``."""

    def __init__(self, conf, url, default_exchange=None,
                 allowed_remote_exmods=None):
        super().__init__(conf, url, default_exchange, allowed_remote_exmods)
        self._exchange_manager = _ExchangeManager(default_exchange)

    def listen(self, target, batch_size, batch_timeout):
        exchange = target.exchange or self._default_exchange
        targets = [oslo_messaging.Target(topic=target.topic,
                                         server=target.server,
                                         exchange=exchange),
                   oslo_messaging.Target(topic=target.topic,
                                         exchange=exchange)]
        return base.PollStyleListenerAdapter(
            _Listener(self._exchange_manager, targets), batch_size,
            batch_timeout)

    def listen_for_notifications(self, targets_and_priorities, pool,
                                 batch_size, batch_timeout):
        targets = [oslo_messaging.Target(topic='%s.%s' % (target.topic,
                                                          priority),
                                         exchange=target.exchange)
                   for target, priority in targets_and_priorities]
        listener = _Listener(self._exchange_manager, targets, pool)
        listener.listen_for_notifications(
            self._notification_key(t) for t in targets)
        return base.PollStyleListenerAdapter(listener, batch_size,
                                             batch_timeout)

    def send_notification(self, target, ctxt, message, version, retry=None):
        # NOTE: only a listener in this process could read it: with none,
        # nothing is kept (fake:// keeps every one for ever, which in a
        # long-running all-in-one is a leak) and no listener is woken.
        if self._notification_key(target) in NOTIFICATION_LISTENERS:
            super().send_notification(target, ctxt, message, version,
                                      retry)

    def _notification_key(self, target):
        return (target.exchange or self._default_exchange, target.topic)


def is_in_process(transport_url):
    """True for the transports whose messages never leave the process."""
    return (transport_url or '').split(':', 1)[0] in ('fake', 'inproc')
