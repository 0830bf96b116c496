"""Options of the [bitstreams] group: the bitstream store, uploads and
signatures."""
from oslo_config import cfg

BITSTREAMS = cfg.OptGroup('bitstreams', title='Bitstream store options')

BITSTREAM_OPTS = [
    cfg.StrOpt('store_dir',
               default='$state_path/bitstreams',
               help='Directory of the content-addressed bitstream store. '
                    'Images are kept as <first two hex digits>/<sha256>; '
                    'uploads are written to a temporary file in this '
                    'directory and renamed into place once complete.'),
    cfg.IntOpt('max_size_mb',
               default=1024,
               min=1,
               max=1024 * 1024,
               help='Largest bitstream accepted by an upload, in MiB. An '
                    'upload stops being read as soon as it passes this.'),
    cfg.IntOpt('chunk_size',
               default=1024 * 1024,
               min=4096,
               max=64 * 1024 * 1024,
               help='Bytes read and hashed at a time while streaming an '
                    'image into or out of the store.'),
    cfg.StrOpt('signature_policy',
               default='warn',
               choices=[
                   ('disabled', 'signatures are not looked at when '
                                'programming'),
                   ('warn', 'any image but one signed with a revoked key '
                            'is programmed; one whose signature is not '
                            'verified is logged as a warning'),
                   ('enforce', 'only images whose signature_status is '
                               'verified are programmed (by a job, a bind '
                               'or a Kubernetes prepare); the agent '
                               'verifies the signature again over the '
                               'bytes it writes')],
               help='What programming does with a bitstream\'s detached '
                    'signature. An admin may set another policy for one '
                    'project (PUT /v2/signature_policies/{project_id}); '
                    'the project that asks for the programming (a job\'s, '
                    'an ARQ\'s, a claim\'s) decides which applies.'),
]


def register_opts(conf):
    conf.register_group(BITSTREAMS)
    conf.register_opts(BITSTREAM_OPTS, group=BITSTREAMS)


def list_opts():
    return [(BITSTREAMS, BITSTREAM_OPTS)]
