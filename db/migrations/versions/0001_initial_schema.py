"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-12-02 14:17:50.515292
"""
from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('bitstreams',
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('version', sa.String(length=64), nullable=True),
    sa.Column('vendor', sa.String(length=255), nullable=True),
    sa.Column('format', sa.Enum('gbs', 'xclbin', 'rbf', 'raw', name='bitstream_format', native_enum=False, create_constraint=True, length=16), nullable=False),
    sa.Column('region_type', sa.String(length=255), nullable=True),
    sa.Column('function_id', sa.String(length=64), nullable=True),
    sa.Column('function_name', sa.String(length=255), nullable=True),
    sa.Column('local_memory_mb', sa.Integer(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=True),
    sa.Column('size', sa.BigInteger(), nullable=True),
    sa.Column('project_id', sa.String(length=64), nullable=True),
    sa.Column('visibility', sa.Enum('private', 'public', name='bitstream_visibility', native_enum=False, create_constraint=True, length=16), nullable=False),
    sa.Column('status', sa.Enum('queued', 'saving', 'active', 'killed', name='bitstream_status', native_enum=False, create_constraint=True, length=16), nullable=False),
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_bitstreams')),
    sa.UniqueConstraint('uuid', name=op.f('uq_bitstreams_uuid'))
    )
    with op.batch_alter_table('bitstreams', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_bitstreams_function_id'), ['function_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_bitstreams_project_id'), ['project_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_bitstreams_region_type'), ['region_type'], unique=False)
        batch_op.create_index(batch_op.f('ix_bitstreams_sha256'), ['sha256'], unique=False)

    op.create_table('device_profiles',
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('profile_json', sa.Text(), nullable=False),
    sa.Column('project_id', sa.String(length=64), nullable=True),
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_device_profiles')),
    sa.UniqueConstraint('name', name=op.f('uq_device_profiles_name')),
    sa.UniqueConstraint('uuid', name=op.f('uq_device_profiles_uuid'))
    )
    with op.batch_alter_table('device_profiles', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_device_profiles_project_id'), ['project_id'], unique=False)

    op.create_table('devices',
    sa.Column('type', sa.Enum('FPGA', 'GPU', 'AICHIP', 'QAT', 'NIC', 'SSD', 'MDEV', 'PCI', 'NVME', name='device_type', native_enum=False, create_constraint=True, length=16), nullable=False),
    sa.Column('vendor', sa.String(length=255), nullable=False),
    sa.Column('model', sa.String(length=255), nullable=False),
    sa.Column('std_board_info', sa.Text(), nullable=True),
    sa.Column('vendor_board_info', sa.Text(), nullable=True),
    sa.Column('hostname', sa.String(length=255), nullable=False),
    sa.Column('driver_name', sa.String(length=64), nullable=False),
    sa.Column('identity', sa.String(length=255), nullable=False),
    sa.Column('pci_address', sa.String(length=16), nullable=True),
    sa.Column('status', sa.Enum('enabled', 'maintaining', name='device_status', native_enum=False, create_constraint=True, length=16), nullable=False),
    sa.Column('health', sa.Enum('healthy', 'degraded', 'unhealthy', name='device_health', native_enum=False, create_constraint=True, length=16), nullable=False),
    sa.Column('rp_uuid', sa.String(length=36), nullable=True),
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_devices')),
    sa.UniqueConstraint('hostname', 'driver_name', 'identity', name=op.f('uq_devices_hostname_driver_name_identity')),
    sa.UniqueConstraint('uuid', name=op.f('uq_devices_uuid'))
    )
    with op.batch_alter_table('devices', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_devices_hostname'), ['hostname'], unique=False)

    op.create_table('controlpath_ids',
    sa.Column('device_id', sa.Integer(), nullable=False),
    sa.Column('cpid_type', sa.Enum('PCI', name='cpid_type', native_enum=False, create_constraint=True, length=16), nullable=False),
    sa.Column('cpid_info', sa.String(length=255), nullable=False),
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['device_id'], ['devices.id'], name=op.f('fk_controlpath_ids_device_id_devices'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_controlpath_ids')),
    sa.UniqueConstraint('uuid', name=op.f('uq_controlpath_ids_uuid'))
    )
    with op.batch_alter_table('controlpath_ids', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_controlpath_ids_device_id'), ['device_id'], unique=False)

    op.create_table('deployables',
    sa.Column('device_id', sa.Integer(), nullable=False),
    sa.Column('parent_id', sa.Integer(), nullable=True),
    sa.Column('root_id', sa.Integer(), nullable=True),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('num_accelerators', sa.Integer(), nullable=False),
    sa.Column('rp_uuid', sa.String(length=36), nullable=True),
    sa.Column('driver_name', sa.String(length=64), nullable=False),
    sa.Column('region_type', sa.String(length=255), nullable=True),
    sa.Column('bitstream_id', sa.String(length=36), nullable=True),
    sa.Column('function_id', sa.String(length=64), nullable=True),
    sa.Column('function_name', sa.String(length=255), nullable=True),
    sa.Column('local_memory_mb', sa.Integer(), nullable=False),
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['device_id'], ['devices.id'], name=op.f('fk_deployables_device_id_devices'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['parent_id'], ['deployables.id'], name=op.f('fk_deployables_parent_id_deployables'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['root_id'], ['deployables.id'], name=op.f('fk_deployables_root_id_deployables'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_deployables')),
    sa.UniqueConstraint('name', name=op.f('uq_deployables_name')),
    sa.UniqueConstraint('uuid', name=op.f('uq_deployables_uuid'))
    )
    with op.batch_alter_table('deployables', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_deployables_device_id'), ['device_id'], unique=False)

    op.create_table('attach_handles',
    sa.Column('deployable_id', sa.Integer(), nullable=False),
    sa.Column('cpid_id', sa.Integer(), nullable=True),
    sa.Column('in_use', sa.Boolean(), nullable=False),
    sa.Column('attach_type', sa.Enum('PCI', 'MDEV', 'TEST_PCI', name='attach_type', native_enum=False, create_constraint=True, length=16), nullable=False),
    sa.Column('attach_info', sa.String(length=255), nullable=False),
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['cpid_id'], ['controlpath_ids.id'], name=op.f('fk_attach_handles_cpid_id_controlpath_ids'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['deployable_id'], ['deployables.id'], name=op.f('fk_attach_handles_deployable_id_deployables'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_attach_handles')),
    sa.UniqueConstraint('uuid', name=op.f('uq_attach_handles_uuid'))
    )
    with op.batch_alter_table('attach_handles', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_attach_handles_deployable_id'), ['deployable_id'], unique=False)

    op.create_table('attributes',
    sa.Column('deployable_id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=255), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['deployable_id'], ['deployables.id'], name=op.f('fk_attributes_deployable_id_deployables'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_attributes')),
    sa.UniqueConstraint('deployable_id', 'key', name=op.f('uq_attributes_deployable_id_key')),
    sa.UniqueConstraint('uuid', name=op.f('uq_attributes_uuid'))
    )
    with op.batch_alter_table('attributes', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_attributes_deployable_id'), ['deployable_id'], unique=False)

    op.create_table('accelerator_requests',
    sa.Column('project_id', sa.String(length=64), nullable=True),
    sa.Column('state', sa.Enum('Initial', 'BindStarted', 'Bound', 'Unbound', 'BindFailed', 'UnbindFailed', 'Deleting', name='arq_state', native_enum=False, create_constraint=True, length=16), nullable=False),
    sa.Column('device_profile_id', sa.Integer(), nullable=False),
    sa.Column('device_profile_group_id', sa.Integer(), nullable=False),
    sa.Column('hostname', sa.String(length=255), nullable=True),
    sa.Column('device_rp_uuid', sa.String(length=36), nullable=True),
    sa.Column('instance_uuid', sa.String(length=36), nullable=True),
    sa.Column('attach_handle_id', sa.Integer(), nullable=True),
    sa.Column('deployable_id', sa.Integer(), nullable=True),
    sa.Column('bind_started_at', sa.DateTime(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['attach_handle_id'], ['attach_handles.id'], name=op.f('fk_accelerator_requests_attach_handle_id_attach_handles'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['deployable_id'], ['deployables.id'], name=op.f('fk_accelerator_requests_deployable_id_deployables'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['device_profile_id'], ['device_profiles.id'], name=op.f('fk_accelerator_requests_device_profile_id_device_profiles'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_accelerator_requests')),
    sa.UniqueConstraint('attach_handle_id', name=op.f('uq_accelerator_requests_attach_handle_id')),
    sa.UniqueConstraint('uuid', name=op.f('uq_accelerator_requests_uuid'))
    )
    with op.batch_alter_table('accelerator_requests', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_accelerator_requests_device_profile_id'), ['device_profile_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_accelerator_requests_instance_uuid'), ['instance_uuid'], unique=False)
        batch_op.create_index(batch_op.f('ix_accelerator_requests_project_id'), ['project_id'], unique=False)

    op.create_table('programming_jobs',
    sa.Column('deployable_id', sa.Integer(), nullable=False),
    sa.Column('bitstream_id', sa.Integer(), nullable=False),
    sa.Column('active_deployable_id', sa.Integer(), nullable=True),
    sa.Column('state', sa.Enum('queued', 'downloading', 'programming', 'verifying', 'succeeded', 'failed', 'cancelled', name='job_state', native_enum=False, create_constraint=True, length=16), nullable=False),
    sa.Column('hostname', sa.String(length=255), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('max_attempts', sa.Integer(), nullable=False),
    sa.Column('force', sa.Boolean(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('requester_user_id', sa.String(length=64), nullable=True),
    sa.Column('project_id', sa.String(length=64), nullable=True),
    sa.Column('arq_id', sa.Integer(), nullable=True),
    sa.Column('started_at', sa.DateTime(), nullable=True),
    sa.Column('heartbeat_at', sa.DateTime(), nullable=True),
    sa.Column('finished_at', sa.DateTime(), nullable=True),
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['arq_id'], ['accelerator_requests.id'], name=op.f('fk_programming_jobs_arq_id_accelerator_requests'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['bitstream_id'], ['bitstreams.id'], name=op.f('fk_programming_jobs_bitstream_id_bitstreams'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['deployable_id'], ['deployables.id'], name=op.f('fk_programming_jobs_deployable_id_deployables'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_programming_jobs')),
    sa.UniqueConstraint('active_deployable_id', name=op.f('uq_programming_jobs_active_deployable_id')),
    sa.UniqueConstraint('uuid', name=op.f('uq_programming_jobs_uuid'))
    )
    with op.batch_alter_table('programming_jobs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_programming_jobs_bitstream_id'), ['bitstream_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_programming_jobs_deployable_id'), ['deployable_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_programming_jobs_project_id'), ['project_id'], unique=False)



def downgrade():
    # NOTE: a table takes its indexes with it; MySQL refuses to drop an
    # index a foreign key still needs, so none is dropped on its own.
    op.drop_table('programming_jobs')
    op.drop_table('accelerator_requests')
    op.drop_table('attributes')
    op.drop_table('attach_handles')
    op.drop_table('deployables')
    op.drop_table('controlpath_ids')
    op.drop_table('devices')
    op.drop_table('device_profiles')
    op.drop_table('bitstreams')
