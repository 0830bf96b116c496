"""Uploads whose header the parsers refuse are a 400 naming the problem,
and leave the bitstream queued with nothing stored (before: a 500 for a
deeply nested GBS, a stored name with a NUL that PostgreSQL refuses)."""
import os

import pytest

from cyborg_lite.bitstreams.formats import gbs
from cyborg_lite.db import bitstreams as bitstreams_db
from tests.functional.api import bitstream_helpers as bh
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import error_of
from tests.unit.bitstreams import builders


def _deep(depth):
    raw = ('{"version": 1, "x": %s}' % ('[' * depth + ']' * depth)).encode()
    return builders.build_gbs(raw_metadata=raw)


def _named(name):
    return builders.build_gbs(builders.gbs_metadata(name=name))


@pytest.mark.parametrize('image, problem', [
    (_deep(100000), 'metadata nests deeper than %d levels' % gbs.MAX_DEPTH),
    (_named('nlb\x00'), '"name" holds a control character (U+0000'),
    (_named('x' * 300), '"name" is 300 characters long'),
    (builders.build_xclbin(vbnv='shell\x07'),
     'm_platformVBNV holds a control character (U+0007'),
])
def test_refused_header_is_400_naming_the_problem(app, conf, image,
                                                  problem):
    fmt = 'xclbin' if image.startswith(b'xclbin2') else 'gbs'
    uuid = bh.create(app, MEMBER_A, format=fmt).json['uuid']
    resp = bh.upload(app, MEMBER_A, uuid, image, status=400)
    assert problem in error_of(resp)
    assert bitstreams_db.get(uuid).status == 'queued'
    assert bh.stored_files(conf.bitstreams.store_dir) == []
    names = os.listdir(conf.bitstreams.store_dir)
    assert [n for n in names if n.startswith('.')] == []
