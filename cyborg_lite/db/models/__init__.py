"""SQLAlchemy models: the one description of the schema.

Migrations in db/migrations/ must produce exactly this schema; a test
compares the two with alembic's autogenerate on SQLite and PostgreSQL.

Conventions:
- ``id`` is the internal key used by foreign keys; ``uuid`` is the public id.
- Rows that several conductors may update at once carry ``version``, used as
  SQLAlchemy's version_id_col: an UPDATE whose version no longer matches
  touches no row and raises StaleDataError instead of losing a write.
- Enumerations are VARCHAR with a CHECK constraint (portable, and a bad value
  is refused by the database itself).

The tables by concept: ``accelerators`` (devices, deployables, handles
and their holders), ``programming`` (bitstreams, signatures, jobs),
``services`` (agents, services and what they keep); ``base`` their
common parts. Every model and constant is importable from here.
"""
# The table modules use ``models.<Name>``.
from cyborg_lite.db.models.base import (
    AGENT_STATES, ARQ_STATES, BITSTREAM_FORMATS, BITSTREAM_STATUSES, Base,
    DEVICE_HEALTH, DEVICE_STATES, DEVICE_STATUSES, DEVICE_TYPES, IdMixin,
    JOB_STATES, NAMING_CONVENTION, SIGNATURE_POLICIES, TimestampMixin,
    TopologyMixin, VISIBILITIES, VersionedMixin, new_row_type, utcnow)
from cyborg_lite.db.models.accelerators import (
    Device, ControlpathId, Deployable, Attribute, AttachHandle,
    KubernetesClaimDevice, DeviceProfile, AcceleratorRequest)
from cyborg_lite.db.models.programming import (
    Bitstream, TrustedKey, ProjectSignaturePolicy, ProgrammingJob,
    ProgrammingJobTry)
from cyborg_lite.db.models.services import (
    Agent, Service, PublishRequest, HostTopology, PlacementProvider,
    PublishedHost, DeviceHistory)

__all__ = [
    'AGENT_STATES', 'ARQ_STATES', 'AcceleratorRequest', 'Agent',
    'AttachHandle', 'Attribute', 'BITSTREAM_FORMATS', 'BITSTREAM_STATUSES',
    'Base', 'Bitstream', 'ControlpathId', 'DEVICE_HEALTH', 'DEVICE_STATES',
    'DEVICE_STATUSES', 'DEVICE_TYPES', 'Deployable', 'Device',
    'DeviceHistory', 'DeviceProfile', 'HostTopology', 'IdMixin',
    'JOB_STATES', 'KubernetesClaimDevice', 'NAMING_CONVENTION',
    'PlacementProvider', 'ProgrammingJob', 'ProgrammingJobTry',
    'ProjectSignaturePolicy', 'PublishRequest', 'PublishedHost',
    'SIGNATURE_POLICIES', 'Service', 'TimestampMixin', 'TopologyMixin',
    'TrustedKey', 'VISIBILITIES', 'VersionedMixin', 'new_row_type', 'utcnow']
