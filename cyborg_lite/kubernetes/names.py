"""Kubernetes name rules we must meet ourselves, and stable DNS-label names.

The published JSON schemas of the API check types, not these rules (a
real apiserver does), so everything we publish or accept goes through the
checks here: DNS labels and subdomains (RFC 1123 as Kubernetes applies it),
label keys and values, and the qualified names of DRA attributes.
"""
import hashlib
import re

DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
C_IDENTIFIER_MAX = 32          # DRA attribute/capacity id (DeviceMaxIDLength)
QUALIFIED_DOMAIN_MAX = 63      # its domain prefix (DeviceMaxDomainLength)
RESERVED_FOR_MAX = 256         # a claim's status.reservedFor entries

_LABEL = r'[a-z0-9]([-a-z0-9]*[a-z0-9])?'
DNS_LABEL_RE = re.compile(_LABEL)
DNS_SUBDOMAIN_RE = re.compile(r'%s(\.%s)*' % (_LABEL, _LABEL))
C_IDENTIFIER_RE = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
LABEL_NAME_RE = re.compile(r'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')
_HASH_LEN = 8


def is_dns_label(value):
    return (isinstance(value, str) and len(value) <= DNS_LABEL_MAX and
            DNS_LABEL_RE.fullmatch(value) is not None)


def is_dns_subdomain(value, max_len=DNS_SUBDOMAIN_MAX):
    return (isinstance(value, str) and len(value) <= max_len and
            DNS_SUBDOMAIN_RE.fullmatch(value) is not None)


def pod_names(names):
    """``names`` as a tuple of pod names (DNS subdomains), at most
    RESERVED_FOR_MAX of them; ValueError saying which is not."""
    if not isinstance(names, (list, tuple)):
        raise ValueError('pods must be a list, not %s'
                         % type(names).__name__)
    if len(names) > RESERVED_FOR_MAX:
        raise ValueError('%d pods: a claim is reserved for at most %d'
                         % (len(names), RESERVED_FOR_MAX))
    for name in names:
        if not isinstance(name, str) or not is_dns_subdomain(name):
            raise ValueError('pod name %r is not a DNS subdomain' % (name,))
    return tuple(names)


def is_qualified_name(value):
    """A DRA attribute or capacity name: ``id`` or ``domain/id``."""
    if not isinstance(value, str):
        return False
    domain, _, ident = value.rpartition('/')
    if domain and not is_dns_subdomain(domain, QUALIFIED_DOMAIN_MAX):
        return False
    return (len(ident) <= C_IDENTIFIER_MAX and
            C_IDENTIFIER_RE.fullmatch(ident) is not None)


def is_label_key(value):
    """A label (or device taint) key: ``[prefix/]name``."""
    if not isinstance(value, str):
        return False
    prefix, _, name = value.rpartition('/')
    if prefix and not is_dns_subdomain(prefix):
        return False
    return (len(name) <= LABEL_VALUE_MAX and
            LABEL_NAME_RE.fullmatch(name) is not None)


def is_label_value(value):
    return isinstance(value, str) and (value == '' or (
        len(value) <= LABEL_VALUE_MAX and
        LABEL_NAME_RE.fullmatch(value) is not None))


def _digest(parts):
    text = '\0'.join(parts)
    return hashlib.sha256(text.encode('utf-8')).hexdigest()[:_HASH_LEN]


def dns_label(*parts, hashed=False, max_len=DNS_LABEL_MAX):
    """A DNS label made of ``parts``, the same for the same parts.

    Lower case; every run of other characters becomes one ``-``, so the
    PCI address ``0000:5e:00.0`` reads ``0000-5e-00-0``. A hash of the exact
    parts is appended when the folding lost more than punctuation (upper
    case, other characters), when the result is too long, or when the
    caller asks (``hashed``, for two inputs that fold to the same label).
    """
    if not parts or not all(isinstance(p, str) and p for p in parts):
        raise ValueError('dns_label needs non-empty strings, got %r'
                         % (parts,))
    joined = '-'.join(parts)
    folded = re.sub(r'[^a-z0-9]+', '-', joined.lower()).strip('-')
    punctuation_only = re.fullmatch(r'[a-z0-9:._-]+', joined) is not None
    if folded and punctuation_only and not hashed and len(folded) <= max_len:
        return folded
    suffix = _digest(parts)
    head = folded[:max_len - _HASH_LEN - 1].strip('-')
    return '%s-%s' % (head, suffix) if head else suffix


def dns_subdomain_name(*parts, max_len=DNS_SUBDOMAIN_MAX):
    """An object name (DNS subdomain) from parts that are each a DNS
    subdomain already, joined by ``-``; cut and hashed when too long."""
    joined = '-'.join(parts)
    if is_dns_subdomain(joined, max_len):
        return joined
    head = joined[:max_len - _HASH_LEN - 1].strip('-.')
    name = '%s-%s' % (head, _digest(parts))
    if not is_dns_subdomain(name, max_len):
        raise ValueError('cannot make an object name of %r' % (parts,))
    return name
