"""The models' common parts: the declarative base, its naming convention,
the mixins and the enumerations' column type."""
import collections
import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg_lite.common import enums
from cyborg_lite.common import states
from cyborg_lite.db.sql import clock

# The enumerations (common/enums.py, common/states.py) by the names the
# table modules use.
DEVICE_TYPES = enums.DEVICE_TYPES
DEVICE_STATUSES = enums.DEVICE_STATUSES
DEVICE_HEALTH = states.HEALTH.states
ARQ_STATES = states.ARQ.states
BITSTREAM_FORMATS = enums.BITSTREAM_FORMATS
BITSTREAM_STATUSES = enums.BITSTREAM_STATUSES
VISIBILITIES = enums.VISIBILITIES
SIGNATURE_POLICIES = enums.SIGNATURE_POLICIES
JOB_STATES = states.JOB.states
DEVICE_STATES = states.DEVICE.states
AGENT_STATES = enums.AGENT_STATES
utcnow = clock.utcnow

NAMING_CONVENTION = {
    'ix': 'ix_%(table_name)s_%(column_0_N_name)s',
    'uq': 'uq_%(table_name)s_%(column_0_N_name)s',
    'ck': 'ck_%(table_name)s_%(constraint_name)s',
    'fk': 'fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s',
    'pk': 'pk_%(table_name)s',
}


def new_row_type(model):
    """A plain stand-in for a new ``model`` object that is written with a
    Core INSERT and shown at once: its columns as attributes (of the same
    names), the unset ones None, as the new ORM object has them. Building
    the ORM object (its instrumentation) cost a tenth of the request."""
    keys = [column.key for column in model.__table__.columns]
    return collections.namedtuple('New' + model.__name__, keys,
                                  defaults=[None] * len(keys))


def enum_type(values, name):
    return sa.Enum(*values, name=name, native_enum=False,
                   create_constraint=True, length=16,
                   validate_strings=True)


class Base(orm.DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


class TimestampMixin:
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, nullable=False, default=utcnow)
    updated_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime, nullable=True, onupdate=utcnow)


class IdMixin(TimestampMixin):
    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True,
                                            autoincrement=True)
    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), nullable=False,
                                              unique=True)


class VersionedMixin:
    version: orm.Mapped[int] = orm.mapped_column(sa.Integer, nullable=False,
                                                 default=1)

    @orm.declared_attr.directive
    def __mapper_args__(cls):
        return {'version_id_col': cls.__table__.c.version}


class TopologyMixin:
    """Where a PCI function sits (common/topology.py): None where the
    driver or the platform gave nothing."""
    numa_node: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    local_cpulist: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    socket: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    pcie_root: orm.Mapped[str | None] = orm.mapped_column(sa.String(16))
