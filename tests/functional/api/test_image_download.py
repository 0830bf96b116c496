"""An agent with ``[agent] image_source = http`` downloads a bitstream from
the real API (the full WSGI stack on a loopback port) through the real
keystoneauth adapter [image_api] describes, as on a host that does not
share the bitstream store."""

import pytest
import webtest

from cyborg_lite.agent import image_fetch
from cyborg_lite.api import deploy
from cyborg_lite.common import exception
from tests.functional.api import bitstream_helpers as bh
from tests.functional.api import conftest as fx
from tests import servers
from tests.unit.bitstreams import builders


@pytest.fixture
def api_endpoint(sqlite_db, api_conf):
    with servers.serving(deploy.loadapp(api_conf)) as url:
        yield url


@pytest.fixture
def fetcher(api_conf, api_endpoint):
    # The agent's configuration of docs/deployment.md (noauth API).
    api_conf.set_override('image_source', 'http', group='agent')
    api_conf.set_override('endpoint_override', api_endpoint,
                          group='image_api')
    fetch = image_fetch.make_fetcher(api_conf)
    assert isinstance(fetch, image_fetch.HttpImages)
    return fetch


def _stored(app, image):
    # A project's private bitstream: the agent (an admin) still gets it.
    return bh.create_active(app, fx.MEMBER_A, image)


def test_agent_downloads_the_image_from_the_api(sqlite_db, api_conf,
                                                fetcher):
    app = webtest.TestApp(deploy.loadapp(api_conf))
    image = builders.build_gbs(payload=b'\xa5' * 300000)
    bitstream = _stored(app, image)
    assert bitstream['visibility'] == 'private'
    got = b''.join(fetcher({'uuid': bitstream['uuid'],
                            'sha256': bitstream['sha256']}))
    assert got == image


def test_download_refused_by_the_api_is_a_programming_error(fetcher):
    with pytest.raises(exception.ProgrammingError) as caught:
        b''.join(fetcher({'uuid': '0b6a4c52-1d4e-4b0e-9f7a-8c4a3b2d1e0f',
                          'sha256': '0' * 64}))
    assert 'HTTP 404' in str(caught.value)
    assert 'could not be found' in str(caught.value)
