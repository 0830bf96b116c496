"""keystoneauth1 Adapters for the services cyborg_lite calls.

[placement], [nova] and [image_api] each hold keystoneauth's standard
session, auth and adapter options (conf/_keystoneauth.py); this builds
the Adapter one of those groups describes. The callers own what goes
over it (placement/client.py, conductor/notifier.py,
agent/image_fetch.py).
"""
from keystoneauth1 import loading as ks_loading


def adapter_from_conf(conf, group, **kwargs):
    """An Adapter from the options of ``group``; ``kwargs`` are Adapter
    defaults such as ``default_microversion`` or ``raise_exc``."""
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    session = ks_loading.load_session_from_conf_options(conf, group,
                                                        auth=auth)
    return ks_loading.load_adapter_from_conf_options(
        conf, group, session=session, auth=auth, **kwargs)
