"""Which resource classes in a device profile group are accelerators.

Cyborg makes one ARQ per unit of every ``resources:`` key in a group. A
group asking ``FPGA:1`` plus ``CUSTOM_FPGA_LOCAL_MEMORY_MB:4096`` means one
FPGA region with 4096 MiB of local memory, not 4097 accelerators, so
classes that measure a size (Placement's own ``MEMORY_MB``, ``DISK_GB``
naming: a unit suffix) qualify the accelerator and make no ARQ.
"""
from cyborg_lite.common import shared_functions

# Resource classes a deployable offers as the whole device: its provider
# is the device's own (a whole GPU passed through is the card).
WHOLE_DEVICE_RESOURCE_CLASSES = ('PGPU',)
SIZE_SUFFIXES = ('_B', '_KB', '_MB', '_GB', '_TB', '_KIB', '_MIB', '_GIB',
                 '_TIB', '_BYTES')


def is_size_class(resource_class):
    return resource_class.upper().endswith(SIZE_SUFFIXES)


def accelerator_count(group):
    """The number of accelerators one device profile group asks for: one
    for a whole card (its ``resources:`` count every region's slot,
    common/shared_functions.py)."""
    if any(key.startswith('trait:') and
           key[len('trait:'):].strip() ==
           shared_functions.WHOLE_CARD_TRAIT and
           value == 'required' for key, value in group.items()):
        return 1
    total = 0
    for key, value in group.items():
        if key.startswith('resources:') and \
                not is_size_class(key[len('resources:'):].strip()):
            total += int(value)
    return total
