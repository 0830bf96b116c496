"""The REST API: Cyborg v2 compatible, plain WSGI and webob.

Layout (the arrangement of openstack-placement's API, no framework):

- ``deploy.loadapp(conf)``: the whole WSGI stack (middleware order is
  documented there); ``handler.ApiHandler`` is the bare application.
- ``handler.py``: ROUTE_DECLARATIONS, every path and method the API
  serves, and the dispatcher (404 for an unknown path, 405 with Allow).
- ``wsgi_wrapper.py``: around each handler: the caller's context, the
  conductor client, errors turned into JSON.
- ``handlers/<resource>.py``: handlers ``handler(req, **path_params)``
  taking a webob Request and returning a webob Response;
  ``handlers/root.py``: the version documents; ``schemas/<resource>.py``:
  JSON Schemas of its bodies and query strings; ``policies/<resource>.py``:
  its rules.
- ``utils.py``: context, policy, body/query validation, pagination, links;
  ``schemas/validator.py``: how schemas are run (integers are ints,
  patterns match whole strings).
- ``microversion.py``: VERSIONS and negotiation; ``fault.py``: Cyborg's
  error body; ``openapi.py``: builds docs/api/openapi.yaml; ``server.py``:
  the all-in-one's HTTP server (cheroot).
- SQL lives in cyborg_lite/db/<resource>.py, never in a handler. Anything
  that changes device state or needs a host goes to the conductor over RPC
  (``utils.conductor(req)``, a cyborg_lite.rpc.conductor_client.ConductorAPI).

Adding a resource (e.g. /v2/bitstreams):

1. ``db/bitstreams.py``: the queries (use ``db.pagination.paginate``).
2. ``api/schemas/bitstreams.py``: ``LIST_QUERY = common.list_query(...)``,
   ``CREATE = {...}``.
3. ``api/policies/bitstreams.py`` with ``list_rules()``; add it to
   ``api/policies/__init__.py``; regenerate etc/policy.yaml.sample.
4. ``api/handlers/bitstreams.py``: handlers that call
   ``utils.authorize``, ``utils.query``/``utils.json_body``, the db module,
   and ``utils.response``; raise domain exceptions (their ``code`` is the
   status).
5. Declare its paths in ``handler.ROUTE_DECLARATIONS``:
   ``'/v2/bitstreams': {'GET': bitstreams.list_bitstreams, ...}``.
6. If it needs a new microversion, append it to ``microversion.VERSIONS``
   and gate with ``microversion.of(req).matches('2.4')``.
7. Describe each operation in ``openapi.OPERATIONS`` and regenerate
   docs/api/openapi.yaml (tests fail until routes and file agree).
8. Add its routes to docs/api.md.
"""
