"""Driver for DFL FPGA cards (Intel PAC-style) through sysfs and /dev.

Discovery reads the DFL sysfs layout (see drivers/dfl.py). Programming
uses the kernel's own interface: the DFL_FPGA_FME_PORT_PR ioctl on
/dev/dfl-fme.N (include/uapi/linux/fpga-dfl.h) given the raw PR bitstream,
that is the GBS file with its header stripped, as OPAE's fpgaconf does.

Cleaning between tenants resets the port and its AFU with the
DFL_FPGA_PORT_RESET ioctl on /dev/dfl-port.N (the AFU's state and its
in-flight DMA are dropped; fpga-dfl.h: "Reset the FPGA Port and its
AFU"), then, where ``[fpga_sysfs] scrub_bitstreams`` names one for the
region's interface id, programs that scrub/blank image over whatever the
tenant loaded. The ioctl call is the one injectable hardware edge
(``self.ioctl``).
"""
import ctypes
import fcntl
import logging
import os
import struct

from cyborg_lite.bitstreams import formats as bitstream_formats
from cyborg_lite.common import exception
from cyborg_lite.drivers import base
from cyborg_lite.drivers import dfl
from cyborg_lite.drivers import topology

LOG = logging.getLogger(__name__)

# _IO(DFL_FPGA_MAGIC 0xB6, DFL_FME_BASE 0x80 + 0): no size encoded.
DFL_FPGA_FME_PORT_PR = 0xB680
# _IO(DFL_FPGA_MAGIC 0xB6, DFL_PORT_BASE 0x40 + 0): no argument.
DFL_FPGA_PORT_RESET = 0xB640
# struct dfl_fpga_fme_port_pr {u32 argsz, flags, port_id, buffer_size;
#                              u64 buffer_address;}
PORT_PR_ARGS = struct.Struct('<IIIIQ')


def port_pr_args(port_id, buffer_size, buffer_address):
    """The packed ioctl argument for DFL_FPGA_FME_PORT_PR."""
    return PORT_PR_ARGS.pack(PORT_PR_ARGS.size, 0, port_id, buffer_size,
                             buffer_address)


class FpgaSysfsDriver(base.Driver, base.DiscoveryInterface,
                      base.ProgrammingInterface, base.CleaningInterface,
                      base.ContainerDevicesInterface,
                      topology.SysfsHostTopology, base.HealthInterface):
    """DFL cards: one deployable per port/PR region, programmable."""

    def __init__(self, conf):
        super().__init__(conf)
        group = conf.fpga_sysfs
        self.sysfs_root = group.sysfs_root
        self.dev_root = group.dev_root
        self.local_memory_mb = group.local_memory_mb
        self.whole_card = group.whole_card
        self.scrub_images = parse_scrub_bitstreams(group.scrub_bitstreams)
        self.correctable_step = conf.health.correctable_errors_per_scan
        # The hardware edge: fcntl.ioctl(fd, request, arg). Tests replace
        # it to capture the argument and simulate the card.
        self.ioctl = fcntl.ioctl
        # The cards the last discover() read, for read_health.
        self._cards = []

    def discover(self):
        try:
            cards = dfl.scan_cards(self.sysfs_root)
        except OSError as e:
            raise exception.DriverError(driver=self.name or 'fpga_sysfs',
                                        reason='cannot read %s: %s'
                                        % (self.sysfs_root, e))
        self._cards = cards
        places = topology.Reader(self.sysfs_root)
        records = []
        for card in cards:
            try:
                records.append(dfl.card_to_record(
                    card, self.local_memory_mb, places=places,
                    whole_card=self.whole_card))
            except exception.HostDataError as e:
                LOG.warning('Skipping DFL card %s: %s', card.pci_address, e)
        return records

    def read_health(self, devices, missing):
        return dfl.read_signals(self._cards, devices, missing,
                                self.sysfs_root, self.correctable_step)

    def loaded_function(self, identity, region_name):
        _card, port = dfl.find_port(self.sysfs_root, identity, region_name)
        return dfl.read_afu_id(port.port_dir)

    def device_nodes(self, identity, deployable_name, attach_info=None):
        return dfl.port_device_nodes(self.sysfs_root, self.dev_root,
                                     identity, deployable_name)

    def program(self, identity, region_name, image_path):
        card, port = self._target(identity, region_name)
        header = _gbs_header(image_path)
        _check_fits(header, port)
        payload = _payload(image_path)
        self._write_pr(card, port, payload)
        loaded = _read_back(port)
        if loaded != header.function_id:
            raise exception.ProgrammingError(
                reason='%s %s reads back AFU %s after programming, '
                       'expected %s' % (identity, region_name, loaded,
                                        header.function_id))
        LOG.info('Programmed %s %s with AFU %s', identity, region_name,
                 loaded)

    def clean(self, identity, deployable_name):
        if deployable_name == dfl.WHOLE_CARD_NAME:
            # Its regions are wiped each on its own: the card's release
            # sends them to cleaning with it (db/cleaning.release).
            return
        try:
            _card, port = dfl.find_port(self.sysfs_root, identity,
                                        deployable_name)
        except exception.DriverError as e:
            raise exception.CleaningError(reason=e.format_message())
        self._reset_port(port)
        scrub = self.scrub_images.get(port.region_type)
        if scrub is not None:
            try:
                self.program(identity, deployable_name, scrub)
            except exception.ProgrammingError as e:
                raise exception.CleaningError(
                    reason='scrub image %s on %s %s: %s' % (
                        scrub, identity, deployable_name,
                        e.format_message()))
        LOG.info('Cleaned %s %s (port reset%s)', identity, deployable_name,
                 ', scrub image %s' % scrub if scrub else '')

    def _reset_port(self, port):
        port_dev = os.path.join(self.dev_root,
                                os.path.basename(port.port_dir))
        try:
            fd = os.open(port_dev, os.O_RDWR)
        except OSError as e:
            raise exception.CleaningError(
                reason='cannot open %s: %s' % (port_dev, e.strerror))
        try:
            self.ioctl(fd, DFL_FPGA_PORT_RESET, 0)
        except OSError as e:
            raise exception.CleaningError(
                reason='DFL_FPGA_PORT_RESET on %s failed: %s'
                % (port_dev, e.strerror or e))
        finally:
            os.close(fd)

    def _target(self, identity, region_name):
        try:
            return dfl.find_port(self.sysfs_root, identity, region_name)
        except exception.DriverError as e:
            raise exception.ProgrammingError(reason=e.format_message())

    def _write_pr(self, card, port, payload):
        fme_dev = os.path.join(self.dev_root, card.fme_name)
        try:
            fd = os.open(fme_dev, os.O_RDWR)
        except OSError as e:
            raise exception.ProgrammingError(
                reason='cannot open %s: %s' % (fme_dev, e.strerror))
        try:
            self._port_pr(fd, port.port_id, payload)
        except OSError as e:
            raise exception.ProgrammingError(
                reason='DFL_FPGA_FME_PORT_PR on %s port %d failed: %s%s'
                % (fme_dev, port.port_id, e.strerror or e,
                   _manager_status(card)))
        finally:
            os.close(fd)

    def _port_pr(self, fd, port_id, payload):
        # The kernel reads the bitstream from our memory at buffer_address,
        # so the buffer must stay alive for the whole call.
        buffer = ctypes.create_string_buffer(payload, len(payload))
        args = port_pr_args(port_id, len(payload), ctypes.addressof(buffer))
        self.ioctl(fd, DFL_FPGA_FME_PORT_PR, args)


def parse_scrub_bitstreams(entries):
    """{compat_id: image path} from '<compat_id>:<path>' entries.

    :raises exception.ConfigError: an interface id given twice.
    """
    images = {}
    for entry in entries:
        compat_id, _sep, path = entry.partition(':')
        if compat_id in images:
            raise exception.ConfigError(
                reason='scrub_bitstreams: %s is given twice' % compat_id)
        images[compat_id] = path
    return images


def _gbs_header(image_path):
    try:
        header = bitstream_formats.parse(image_path)
    except OSError as e:
        raise exception.ProgrammingError(
            reason='cannot read image %s: %s' % (image_path, e.strerror))
    except exception.Invalid as e:
        raise exception.ProgrammingError(reason=e.format_message())
    if header.format != 'gbs':
        # The GBS header carries the interface id checked below; a raw
        # image could not be checked against the region, so it is refused.
        raise exception.ProgrammingError(
            reason='DFL cards take GBS images, %s is %s'
            % (image_path, header.format))
    return header


def _check_fits(header, port):
    if port.region_type is None:
        raise exception.ProgrammingError(
            reason='region %s has no readable compat_id, so the image '
                   'cannot be checked against it' % port.region_name)
    if header.region_type != port.region_type:
        raise exception.ProgrammingError(
            reason='image interface-uuid %s does not match region %s '
                   'compat_id %s' % (header.region_type, port.region_name,
                                     port.region_type))


def _payload(image_path):
    try:
        return bitstream_formats.strip_header(image_path)
    except OSError as e:
        raise exception.ProgrammingError(
            reason='cannot read image %s: %s' % (image_path, e.strerror))


def _read_back(port):
    try:
        return dfl.read_afu_id(port.port_dir)
    except exception.DriverError as e:
        raise exception.ProgrammingError(
            reason='cannot verify %s: %s' % (port.region_name,
                                             e.format_message()))


def _manager_status(card):
    """The FPGA manager's error lines, to explain a failed PR (-EIO)."""
    if not card.manager_status_path:
        return ''
    try:
        with open(card.manager_status_path) as f:
            status = f.read().strip()
    except OSError:
        return ''
    return '; fpga_manager status: %s' % status.replace('\n', ', ') \
        if status else ''
