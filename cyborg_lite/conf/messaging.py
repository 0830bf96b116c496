"""Registers oslo.messaging's [DEFAULT] options early.

oslo.messaging registers ``transport_url`` and friends only when a transport
is created; registering them with the rest lets config files, tests and the
all-in-one set them before that. The sample config lists them through the
``oslo.messaging`` generator namespace, so list_opts adds nothing here.
"""
from oslo_messaging import opts as messaging_opts


def register_opts(conf):
    for group, group_opts in messaging_opts.list_opts():
        if group in (None, 'DEFAULT'):
            conf.register_opts(group_opts)


def list_opts():
    return []
