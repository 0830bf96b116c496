"""docs/api/openapi.yaml is true: it is what the code describes, it names
exactly the routes the app serves, and fuzzing every operation it lists
(schemathesis) never gets a 5xx."""
import os

import hypothesis
import pytest
import schemathesis
import yaml

from cyborg_lite.api import openapi
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import error_of
from tests.functional.api.test_real_clients import endpoint  # noqa: F401

SPEC = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'docs',
                    'api', 'openapi.yaml')
UUID = '5d6a8f0e-6a47-4b5b-9c50-1a2b3c4d5e6f'


def _spec():
    with open(SPEC) as f:
        return yaml.safe_load(f)


def test_file_is_what_the_code_builds():
    assert _spec() == openapi.build(), (
        'regenerate: python -m cyborg_lite.api.openapi > '
        'docs/api/openapi.yaml')


def test_file_lists_exactly_the_served_routes():
    listed = {(path, method.upper()) for path, ops in _spec()['paths'].items()
              for method in ops}
    assert listed == openapi.served_routes()


@pytest.mark.parametrize('path,method', sorted(openapi.served_routes()))
def test_each_listed_route_is_routed(app, path, method):
    url = path.replace('{uuid}', UUID).replace('{uuid_or_name}', UUID)
    resp = app.request(url, method=method, headers=ADMIN,
                       expect_errors=True)
    # Routed: the handler answered (a missing object is its own 404).
    assert resp.status_int != 405
    if resp.status_int == 404:
        assert error_of(resp) != 'The resource could not be found.'


SCHEMA = schemathesis.openapi.from_path(SPEC)


@SCHEMA.parametrize()
@hypothesis.settings(max_examples=15, deadline=None, derandomize=True,
                     suppress_health_check=list(hypothesis.HealthCheck))
def test_fuzz_never_a_server_error(case, endpoint):  # noqa: F811
    case.headers = dict(case.headers or {}, **ADMIN)
    response = case.call(base_url=endpoint)
    assert response.status_code < 500, (case.method, case.path,
                                        response.text)
