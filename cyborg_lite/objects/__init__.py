"""Plain views that several layers share, built from the database.

Pure data and pure functions: no session outlives a call, nothing here
talks to another service. The API and the conductor reach these
downward (objects may use db, common and conf only):

- host_inventory: the neutral view of one host's inventory (devices,
  deployables, attach handles, their states) that every inventory sink
  translates.
- inventory_sink: the interface of a sink ("publish this host's desired
  inventory"), loaded by name by the conductor.
- provider_tree: Placement's translation of a host inventory, here so
  that the API can show the tree the Placement sink pushes.
"""
