"""The REST API: Cyborg v2 compatible, on pecan.

Layout:

- ``deploy.loadapp(conf)``: the whole WSGI stack (middleware order is
  documented there); ``app.setup_app`` is the bare pecan app.
- ``controllers/root.py``: version document and the route table;
  ``controllers/v2.py`` gathers each resource module's ``ROUTES``.
- ``controllers/<resource>.py``: handlers ``handler(req, **path_params)``
  returning a webob Response; ``schemas/<resource>.py``: JSON Schemas of
  its bodies and query strings; ``policies/<resource>.py``: its rules.
- ``utils.py``: context, policy, body/query validation, pagination, links.
- ``microversion.py``: VERSIONS and negotiation; ``fault.py``: Cyborg's
  error body; ``openapi.py``: builds docs/api/openapi.yaml.
- SQL lives in cyborg_lite/db/<resource>.py, never in a handler. Anything
  that changes device state or needs a host goes to the conductor over RPC
  (``utils.conductor(req)``, a cyborg_lite.conductor.rpcapi.ConductorAPI).

Adding a resource (e.g. /v2/bitstreams):

1. ``db/bitstreams.py``: the queries (use ``db.pagination.paginate``).
2. ``api/schemas/bitstreams.py``: ``LIST_QUERY = common.list_query(...)``,
   ``CREATE = {...}``.
3. ``api/policies/bitstreams.py`` with ``list_rules()``; add it to
   ``api/policies/__init__.py``; regenerate etc/policy.yaml.sample.
4. ``api/controllers/bitstreams.py``: handlers that call
   ``utils.authorize``, ``utils.query``/``utils.json_body``, the db module,
   and ``utils.response``; raise domain exceptions (their ``code`` is the
   status); end with ``ROUTES = {'/bitstreams': {'GET': ..., 'POST': ...},
   '/bitstreams/{uuid}': {...}}``.
5. Add the module to ``controllers/v2.RESOURCES``.
6. If it needs a new microversion, append it to ``microversion.VERSIONS``
   and gate with ``microversion.of(req).matches('2.4')``.
7. Describe each operation in ``openapi.OPERATIONS`` and regenerate
   docs/api/openapi.yaml (tests fail until routes and file agree).
8. Add its routes to docs/api.md.
"""
