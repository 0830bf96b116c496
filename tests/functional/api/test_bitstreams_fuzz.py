"""Fuzz the 2.4 routes (/v2/bitstreams, /v2/programs) as documented in
docs/api/openapi.yaml, at version 2.4: the generic fuzz of
test_openapi.py sends no version header, so it only meets their 404.
Every answer must be as documented (test_openapi.CHECKS); the upload's generated bodies
are bounded by the schema (schemas.bitstreams.IMAGE)."""
import os

import hypothesis
import schemathesis

from tests.functional.api.bitstream_helpers import V24
from tests.functional.api import test_openapi
from tests.functional.api.conftest import ADMIN
from tests.functional.api.test_openapi import seeded  # noqa: F401
from tests.functional.api.test_real_clients import endpoint  # noqa: F401

SPEC = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'docs',
                    'api', 'openapi.yaml')
SCHEMA = schemathesis.openapi.from_path(SPEC).include(
    path_regex='^/v2/(bitstreams|programs)')


@SCHEMA.parametrize()
@hypothesis.settings(max_examples=15, deadline=None, derandomize=True,
                     suppress_health_check=list(hypothesis.HealthCheck))
def test_fuzz_2_4_every_answer_is_as_documented(case, seeded):  # noqa: F811
    case.headers = dict(case.headers or {}, **ADMIN)
    case.headers.update(V24)
    response = case.call(base_url=seeded)
    case.validate_response(response, checks=test_openapi.CHECKS)
