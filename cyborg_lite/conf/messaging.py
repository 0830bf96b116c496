"""Registers oslo.messaging's [DEFAULT] and [oslo_messaging_notifications]
options early.

oslo.messaging registers ``transport_url`` and friends only when a transport
is created; registering them with the rest lets config files, tests and the
all-in-one set them before that. The sample config lists them through the
``oslo.messaging`` generator namespace, so list_opts adds nothing here.
"""
from oslo_messaging import opts as messaging_opts


# Notifications are decided before a transport is made
# (notifications/events.py reads [oslo_messaging_notifications]driver).
NOTIFICATIONS_GROUP = 'oslo_messaging_notifications'


def register_opts(conf):
    for group, group_opts in messaging_opts.list_opts():
        if group in (None, 'DEFAULT'):
            conf.register_opts(group_opts)
        elif group == NOTIFICATIONS_GROUP:
            conf.register_opts(group_opts, group=group)


def list_opts():
    return []
