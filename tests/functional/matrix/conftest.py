"""The matrix tests' world: the services every matrix test shares
(``services``) and a host of each test's own (``make_host``); see
world.py."""
import shutil
import tempfile

import pytest

from cyborg_lite.conductor import report
from cyborg_lite.conf import CONF
from tests import conftest as root_conftest
from tests.functional.matrix import world
from tests.unit.kubernetes import fake_apiserver


@pytest.fixture(scope='package')
def services(placement, tmp_path_factory):
    """The API, a conductor, the database and the apiserver stand-in of
    the matrix tests (hosts keep them apart); its options undone after,
    as the ``conf`` fixture does (a matrix test takes neither ``conf``
    nor ``sqlite_db``)."""
    apiserver = fake_apiserver.FakeKubeApiServer().start()
    state = tmp_path_factory.mktemp('matrix')
    found = None
    try:
        found = world.Services(CONF, placement, apiserver, str(state))
        yield found.start()
    finally:
        try:
            if found is not None:
                found.stop()
        finally:
            apiserver.stop()
            root_conftest._clear_all_overrides(CONF)
            report.VALID_REPORTS.clear()


@pytest.fixture
def make_host(services, tmp_path):
    """make_host(**options) -> a started world.Host (see its options);
    stopped after the test."""
    made = []

    def make(expected=None, **options):
        # Unix socket paths must stay under 108 bytes: not tmp_path.
        short_dir = tempfile.mkdtemp(prefix='mx', dir='/tmp')
        host = world.Host(services, tmp_path / ('h%d' % len(made)),
                          short_dir, **options)
        made.append(host)
        return host.start(expected)
    yield make
    for host in reversed(made):
        try:
            host.stop()
        finally:
            shutil.rmtree(host.short_dir, ignore_errors=True)
