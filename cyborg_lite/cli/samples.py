"""``bitstream sample``: write a small valid GBS or xclbin image, to try
bitstreams and programming without a vendor toolchain.

The image is built by the same format code the API's parsers use
(cyborg_lite.bitstreams.formats.build), for the fake driver's
region type unless told otherwise, so the all-in-one can store it and
program a simulated region with it. The payload is filler: real hardware
would refuse it. Talks to no API.
"""
import argparse
import hashlib
import os
import uuid

from cliff import show

from cyborg_lite.bitstreams import formats as bitstream_formats
from cyborg_lite.cli import client as cl_client
from cyborg_lite.common import exception

DEFAULT_NAME = 'sample'
DEFAULT_PAYLOAD_SIZE = 4096
MAX_PAYLOAD_SIZE = 64 * 1024 * 1024
# Function ids derived from the name: the same name gives the same id.
_ID_NAMESPACE = uuid.UUID('1b0c5a1e-6c1d-4c8e-9f3a-2f4d8e7b6a50')


def fake_region_type():
    """The region type (compat_id) the fake driver gives its first
    region: the first of [fake_driver] region_types' default."""
    # NOTE: imported here: loading the option registry is not free, and
    # only this command needs it.
    from cyborg_lite.conf import drivers as drivers_conf
    opt = next(o for o in drivers_conf.FAKE_OPTS if o.name == 'region_types')
    return opt.default[0]


def function_id_for(name):
    return uuid.uuid5(_ID_NAMESPACE, name).hex


def filler(size):
    """``size`` bytes of a repeating, recognisable pattern."""
    block = bytes(range(256))
    return (block * (size // 256 + 1))[:size]


def _payload_size(text):
    try:
        size = int(text, 10)
    except ValueError:
        size = None
    if size is None or not 1 <= size <= MAX_PAYLOAD_SIZE:
        raise argparse.ArgumentTypeError(
            '%r is not a number of bytes between 1 and %d'
            % (text, MAX_PAYLOAD_SIZE))
    return size


class SampleBitstream(show.ShowOne):
    """Write a small valid GBS or xclbin image for the fake driver."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--file', metavar='<path>', required=True,
                            help='Where to write the image (replaced)')
        parser.add_argument('--bitstream-format', dest='format',
                            choices=bitstream_formats.WRITABLE_FORMATS,
                            default='gbs', help='Image format (default gbs)')
        parser.add_argument('--region-type', metavar='<id>',
                            help='PR interface id (compat_id) the image fits '
                                 '(default: the fake driver\'s)')
        parser.add_argument('--function-name', metavar='<name>',
                            default=DEFAULT_NAME,
                            help='Function (AFU / kernel) name (default '
                                 '%s)' % DEFAULT_NAME)
        parser.add_argument('--function-id', metavar='<id>',
                            help='Function id the image loads (default: '
                                 'derived from the name)')
        parser.add_argument('--payload-size', metavar='<bytes>',
                            type=_payload_size, default=DEFAULT_PAYLOAD_SIZE,
                            help='Bytes of filler payload (default %d)'
                                 % DEFAULT_PAYLOAD_SIZE)
        return parser

    def take_action(self, parsed_args):
        region_type = parsed_args.region_type or fake_region_type()
        function_id = (parsed_args.function_id or
                       function_id_for(parsed_args.function_name))
        try:
            data = bitstream_formats.build(
                parsed_args.format, region_type, function_id,
                parsed_args.function_name,
                filler(parsed_args.payload_size))
        except exception.Invalid as exc:
            raise cl_client.ClientError(exc)
        _write(parsed_args.file, data)
        header = bitstream_formats.parse(parsed_args.file)
        fields = {'file': os.path.abspath(parsed_args.file),
                  'format': header.format, 'region_type': header.region_type,
                  'function_id': header.function_id,
                  'function_name': header.function_name,
                  'size': len(data),
                  'sha256': hashlib.sha256(data).hexdigest()}
        names = tuple(sorted(fields))
        return names, tuple(fields[n] for n in names)


def _write(path, data):
    try:
        with open(path, 'wb') as f:
            f.write(data)
    except OSError as exc:
        raise cl_client.ClientError('Cannot write %s: %s'
                                    % (path, exc.strerror or exc))
