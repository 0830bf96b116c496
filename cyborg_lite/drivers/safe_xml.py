"""Parse tool XML without entity expansion (no XML bombs, no XXE).

xml.etree's C parser expands internal entities and gives no hook to stop
it, so expat is driven directly into an ElementTree TreeBuilder. Entity
declarations and internal DTD subsets are refused; a plain external
DOCTYPE line (nvidia-smi writes ``<!DOCTYPE nvidia_smi_log SYSTEM
"nvsmi_device_v12.dtd">``) is allowed and never fetched.
"""
import xml.etree.ElementTree as ET
from xml.parsers import expat

from cyborg_lite.common import exception


class _Refused(Exception):
    pass


def _refuse(what):
    def handler(*_args):
        raise _Refused(what)
    return handler


def _doctype(_name, _sysid, _pubid, has_internal_subset):
    if has_internal_subset:
        raise _Refused('a DTD internal subset')


def parse(data, where):
    """The root Element of ``data`` (bytes); HostDataError if refused/bad."""
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.StartDoctypeDeclHandler = _doctype
    parser.EntityDeclHandler = _refuse('entity declarations')
    parser.UnparsedEntityDeclHandler = _refuse('entity declarations')
    parser.ExternalEntityRefHandler = _refuse('external entities')
    try:
        parser.Parse(data, True)
        return builder.close()
    except _Refused as e:
        raise exception.HostDataError(where=where, reason='XML with %s is '
                                      'refused' % e)
    except (expat.ExpatError, AssertionError) as e:
        # TreeBuilder.close() asserts when elements were left open.
        raise exception.HostDataError(where=where,
                                      reason='not well-formed XML: %s'
                                      % (e or 'truncated'))
