"""Database layer: models, sessions, migrations and every query.

All SQL of cyborg_lite lives in this package, one module per resource
that owns its queries and its transactions; the conductor and the API
call them and never see a session:

- arqs: accelerator requests, their bind transitions and the bind reaper.
- attach_handles: claiming and freeing a handle.
- deployables: reads, and the region lock and lookups binds and
  programming jobs share.
- devices: reads, and everything one host offers (for the sinks).
- inventory: applying an agent report; the Placement sink's rp uuids.
- programming_jobs: the job table, its transitions, reaper and reads.
- placement_providers: our Placement resource providers as last seen,
  by generation, shared by every conductor's reporter.
- bitstreams, device_profiles, attributes: their tables.

Shared: session (engines, transactions), conditional (the one
conditional UPDATE every racing writer uses), clock (the database's
time), pagination, models (the schema), migration.
"""
