"""The values of the enumerated columns (db/models/ stores them as
VARCHAR with a CHECK constraint), apart from the ORM: the API's schemas
and the bitstream code name them without importing SQLAlchemy. State
machines' states are common/states.py's."""

DEVICE_TYPES = ('FPGA', 'GPU', 'AICHIP', 'QAT', 'NIC', 'SSD', 'MDEV', 'PCI',
                'NVME')
DEVICE_STATUSES = ('enabled', 'maintaining')
ATTACH_TYPES = ('PCI', 'MDEV', 'TEST_PCI')
CPID_TYPES = ('PCI',)
BITSTREAM_FORMATS = ('gbs', 'xclbin', 'rbf', 'raw')
BITSTREAM_STATUSES = ('queued', 'saving', 'active', 'killed')
VISIBILITIES = ('private', 'public')
AGENT_STATES = ('up', 'down')
# bitstreams/signatures.py implements them.
SIGNATURE_ALGORITHMS = ('ed25519', 'ecdsa-p256')
# [bitstreams]signature_policy and its per-project overrides.
SIGNATURE_POLICIES = ('disabled', 'warn', 'enforce')
