"""Request context passed through the API, RPC and the conductor."""
from oslo_context import context


class RequestContext(context.RequestContext):
    """An oslo.context RequestContext; ``is_admin`` comes from policy."""

    @classmethod
    def from_dict(cls, values, **kwargs):
        # NOTE: RPC deserialises with this; unknown keys from a newer peer
        # are dropped by oslo.context rather than failing the call.
        return super().from_dict(values, **kwargs)


def get_admin_context():
    return RequestContext(is_admin=True, roles=['admin'],
                          overwrite=False)
