"""Bitstream policies (Glance-like).

A bitstream belongs to the project that created it. Reads are further
limited by visibility in the database: private bitstreams are seen by
their project and admins, public ones by everyone with a role. Making a
bitstream public is an admin's act (Glance's ``publicize_image``): a
public image is offered to every project's regions.
"""

from cyborg_lite.api.policies import base

GET_ALL = 'cyborg:bitstream:get_all'
GET_ONE = 'cyborg:bitstream:get_one'
CREATE = 'cyborg:bitstream:create'
PUBLICIZE = 'cyborg:bitstream:publicize'
UPLOAD = 'cyborg:bitstream:upload'
DOWNLOAD = 'cyborg:bitstream:download'
DELETE = 'cyborg:bitstream:delete'
SIGN = 'cyborg:bitstream:sign'

_PATH = '/v2/bitstreams'


_rule = base.rule


RULES = [
    _rule(GET_ALL, base.PROJECT_READER_OR_ADMIN,
          'List the bitstreams the caller may see (public ones and its '
          'project\'s; all for admins).', _PATH, 'GET'),
    _rule(GET_ONE, base.PROJECT_READER_OR_ADMIN,
          'Show one bitstream the caller may see.',
          _PATH + '/{bitstream_uuid}', 'GET'),
    _rule(CREATE, base.PROJECT_MEMBER_OR_ADMIN,
          'Create a bitstream\'s metadata (owned by the caller\'s project).',
          _PATH, 'POST'),
    _rule(PUBLICIZE, base.ADMIN,
          'Create a bitstream with visibility public.', _PATH, 'POST'),
    _rule(UPLOAD, base.PROJECT_MEMBER_OR_ADMIN,
          'Upload the image of a bitstream; the target is the bitstream, '
          'so members upload only to their project\'s.',
          _PATH + '/{bitstream_uuid}/file', 'PUT'),
    _rule(DOWNLOAD, base.PROJECT_READER_OR_ADMIN,
          'Download the image of a bitstream the caller may see.',
          _PATH + '/{bitstream_uuid}/file', 'GET'),
    _rule(SIGN, base.PROJECT_MEMBER_OR_ADMIN,
          'Attach (PUT) or remove (DELETE) the detached signature of a '
          'bitstream\'s image; the target is the bitstream, so members '
          'sign only their project\'s. Whether the signature is trusted '
          'is decided by the keys an admin registered.',
          _PATH + '/{bitstream_uuid}/signature', 'PUT'),
    _rule(DELETE, base.PROJECT_MEMBER_OR_ADMIN,
          'Delete a bitstream; the target is the bitstream, so members '
          'delete only their project\'s.',
          _PATH + '/{bitstream_uuid}', 'DELETE'),
]


def list_rules():
    return RULES
