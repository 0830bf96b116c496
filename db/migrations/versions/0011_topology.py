"""topology: where devices and regions sit, and each host's NUMA nodes

devices and deployables get numa_node, local_cpulist, socket and
pcie_root (deployables also pci_bus_id, the function a region is reached
through); host_topologies keeps each host's NUMA nodes and SLIT. Every
new column is NULL until the host's agent reports again: NULL is
"unknown", never node 0.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05 02:00:00
"""
from alembic import op
import sqlalchemy as sa

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

_TOPOLOGY = (('numa_node', sa.Integer), ('local_cpulist', sa.Text),
             ('socket', sa.Integer), ('pcie_root', lambda: sa.String(16)))


def upgrade():
    for table in ('devices', 'deployables'):
        with op.batch_alter_table(table) as batch:
            for name, kind in _TOPOLOGY:
                batch.add_column(sa.Column(name, kind(), nullable=True))
            if table == 'deployables':
                batch.add_column(sa.Column('pci_bus_id', sa.String(16),
                                           nullable=True))
    op.create_table(
        'host_topologies',
        sa.Column('hostname', sa.String(length=255), nullable=False),
        sa.Column('numa_nodes', sa.Text(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('hostname',
                                name=op.f('pk_host_topologies')))


def downgrade():
    op.drop_table('host_topologies')
    for table in ('deployables', 'devices'):
        with op.batch_alter_table(table) as batch:
            if table == 'deployables':
                batch.drop_column('pci_bus_id')
            for name, _kind in reversed(_TOPOLOGY):
                batch.drop_column(name)
