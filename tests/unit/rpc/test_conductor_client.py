"""ConductorAPI turns a remote InvalidReport back into InvalidReport."""
import oslo_messaging as messaging
import pytest

from cyborg_lite.common import exception
from cyborg_lite.rpc import conductor_client as rpcapi
from cyborg_lite.rpc import transport as rpc


class _RefusingTransportClient:
    """What a rabbit:// caller gets for a server-side InvalidReport."""

    def __init__(self, exc_type):
        self.exc_type = exc_type

    def prepare(self, **kwargs):
        return self

    def call(self, ctxt, method, **kwargs):
        raise messaging.RemoteError(self.exc_type, 'Report from host n1 '
                                    'rejected: bad', [])


@pytest.fixture
def api(conf):
    conf.set_override('transport_url', 'inproc://')
    yield rpcapi.ConductorAPI()
    rpc.cleanup()


def test_remote_invalid_report_is_raised_as_itself(api):
    api.client = _RefusingTransportClient('InvalidReport')
    with pytest.raises(exception.InvalidReport, match='rejected: bad'):
        api.report(None, 'n1', [])


def test_other_remote_errors_pass_through(api):
    api.client = _RefusingTransportClient('KeyError')
    with pytest.raises(messaging.RemoteError):
        api.report(None, 'n1', [])
