"""The one ConfigOpts of cyborg_lite.

Each option group lives in its own module beside this one and exposes
``register_opts(conf)`` and ``list_opts()``; ``opts.py`` finds them with
pkgutil, so adding a group needs no edit here.
"""
from oslo_config import cfg

from cyborg_lite.conf import opts

CONF = cfg.CONF

opts.register_all(CONF)
