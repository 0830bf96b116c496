"""Fixtures for the driver tests: copies of the fixture host trees."""
import json
import os
import shutil
import struct
import uuid

import pytest

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'fixtures', 'drivers')
GBS_MAGIC = uuid.UUID('58656f6e-4650-4741-b747-425376303031').bytes


def fixture_path(*parts):
    return os.path.join(FIXTURES, *parts)


@pytest.fixture
def dfl_host(tmp_path):
    """A writable copy of the DFL host tree (symlinks kept as symlinks)."""
    root = tmp_path / 'host'
    shutil.copytree(fixture_path('dfl_host'), root, symlinks=True)
    return root


def gbs_bytes(interface_uuid, afu_uuid, payload=b'\x00\x01PR-BITS\xff',
              name='nlb_400'):
    """A GBS file as OPAE's packager writes it (magic, LE length, JSON)."""
    metadata = json.dumps({
        'version': 1, 'platform-name': 'DCP',
        'afu-image': {
            'magic-no': 488605312, 'interface-uuid': interface_uuid,
            'clock-frequency-high': 312, 'clock-frequency-low': 156,
            'power': 0,
            'accelerator-clusters': [{
                'name': name, 'total-contexts': 1,
                'accelerator-type-uuid': afu_uuid}]}}).encode()
    return GBS_MAGIC + struct.pack('<I', len(metadata)) + metadata + payload


@pytest.fixture
def make_gbs(tmp_path):
    def _make(interface_uuid, afu_uuid, payload=b'\x00\x01PR-BITS\xff',
              filename='image.gbs'):
        path = tmp_path / filename
        path.write_bytes(gbs_bytes(interface_uuid, afu_uuid, payload))
        return str(path)
    return _make
