"""Safe readers for sysfs-style trees, shared by the drivers.

Every reader takes a full path and either returns a clean value, returns
None when the file is absent (absent is normal in sysfs: an attribute
exists only on some devices), or raises exception.HostDataError when the
file is there but holds something the kernel would never write. Drivers
catch HostDataError per device, so one bad file never stops a scan.
"""
import errno
import os
import re

from cyborg_lite.common import exception

# All patterns are matched against the whole string (fullmatch).
PCI_ADDRESS_RE = re.compile(
    r'([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])')
HEX_ID_RE = re.compile(r'[0-9a-f]{32}')
# Tools print the domain with 4 to 8 digits and hex in either case.
TOOL_PCI_ADDRESS_RE = re.compile(
    r'([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])')
# sysfs attributes are one page at most; anything longer is not sysfs.
MAX_ATTR_BYTES = 4096


def read_text(path):
    """The attribute's text without its trailing newline, or None if absent.

    An attribute whose read fails with ENOENT/ENODEV is treated as absent:
    the kernel returns that for optional values (a base region has no
    compat_id). Other read errors (EBUSY for a disabled port, EIO) raise
    HostDataError so the caller can decide what the missing value means.
    """
    try:
        with open(path, 'rb') as f:
            data = f.read(MAX_ATTR_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ENODEV):
            return None
        raise exception.HostDataError(where=path, errno=e.errno,
                                      reason=e.strerror or str(e))
    if len(data) > MAX_ATTR_BYTES:
        raise exception.HostDataError(where=path,
                                      reason='longer than a sysfs page')
    try:
        text = data.decode('ascii')
    except UnicodeDecodeError:
        raise exception.HostDataError(where=path,
                                      reason='not ASCII text')
    return text[:-1] if text.endswith('\n') else text


def read_hex_int(path, bits=32):
    """A value the kernel prints as 0x%x (vendor, device, class), or None."""
    text = read_text(path)
    if text is None:
        return None
    if not re.fullmatch(r'0x[0-9a-fA-F]{1,%d}' % (bits // 4), text):
        raise exception.HostDataError(where=path,
                                      reason='expected 0x<hex>, got %r'
                                      % text[:40])
    return int(text, 16)


def read_int(path, low=0, high=1 << 31):
    """A decimal attribute (id, ports_num, sriov_numvfs), or None."""
    text = read_text(path)
    if text is None:
        return None
    if not re.fullmatch(r'-?[0-9]{1,19}', text) or not \
            low <= int(text) <= high:
        raise exception.HostDataError(where=path,
                                      reason='expected an integer from %d to '
                                      '%d, got %r' % (low, high, text[:40]))
    return int(text)


def read_hex_id(path):
    """A 128-bit id printed as 32 lowercase hex digits (afu_id, compat_id)."""
    text = read_text(path)
    if text is None:
        return None
    if not HEX_ID_RE.fullmatch(text):
        raise exception.HostDataError(where=path,
                                      reason='expected 32 lowercase hex '
                                      'digits, got %r' % text[:40])
    return text


def normalise_pci_address(text):
    """'00000000:3B:00.0' (nvidia-smi, xbutil) -> '0000:3b:00.0' (sysfs)."""
    match = TOOL_PCI_ADDRESS_RE.fullmatch((text or '').strip())
    if not match or int(match.group(1), 16) > 0xffff:
        raise exception.HostDataError(where='PCI address',
                                      reason='not a PCI bus id: %r'
                                      % (text,))
    domain, bus, device, function = match.groups()
    return ('%04x:%s:%s.%s' % (int(domain, 16), bus, device,
                               function)).lower()


def pci_device_dir(path):
    """The real directory of the PCI function that owns ``path``, or None."""
    real = os.path.realpath(path)
    while real not in ('', os.sep):
        if PCI_ADDRESS_RE.fullmatch(os.path.basename(real)):
            return real
        real = os.path.dirname(real)
    return None


def pci_attach_info(address):
    """Split '0000:5e:00.1' into Cyborg's attach_info dict of hex strings."""
    match = PCI_ADDRESS_RE.fullmatch(address or '')
    if not match:
        raise exception.HostDataError(where='pci address',
                                      reason='not a PCI address: %r'
                                      % (address,))
    domain, bus, device, function = match.groups()
    return {'domain': domain, 'bus': bus, 'device': device,
            'function': function}


def virtual_function_dirs(pf_dir):
    """Real directories of the PF's VFs, in virtfnN order (N numeric).

    The kernel links ``<PF>/virtfnN`` to VF number N (sysfs-bus-pci ABI);
    a link that does not end in a PCI function is ignored.
    """
    found = []
    for name in list_dir(pf_dir):
        match = re.fullmatch(r'virtfn([0-9]+)', name)
        if not match:
            continue
        real = os.path.realpath(os.path.join(pf_dir, name))
        if PCI_ADDRESS_RE.fullmatch(os.path.basename(real)):
            found.append((int(match.group(1)), real))
    return [real for _, real in sorted(found)]


def virtual_functions(pf_dir):
    """PCI addresses of the PF's VFs, in virtfnN order (N numeric)."""
    return [os.path.basename(d) for d in virtual_function_dirs(pf_dir)]


def list_dir(path):
    """Entries of a directory, sorted; [] when it does not exist."""
    try:
        return sorted(os.listdir(path))
    except (FileNotFoundError, NotADirectoryError):
        return []


def numbered(entries, prefix):
    """Entries named <prefix><N>, sorted by N as a number (region10 > 9)."""
    pattern = re.compile(r'%s([0-9]+)' % re.escape(prefix))
    matches = [(int(m.group(1)), e) for e in entries
               for m in [pattern.fullmatch(e)] if m]
    return [e for _, e in sorted(matches)]
