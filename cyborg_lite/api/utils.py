"""Helpers every resource handler uses: the caller, bodies, query strings,
pagination, links and responses."""
import http
import io
import json
import re
import urllib.parse

from jsonschema import exceptions as js_exc
from oslo_log import log as logging
import oslo_messaging as messaging
import webob
import webob.exc

from cyborg_lite.api import json_list
from cyborg_lite.api import policy
from cyborg_lite.api.schemas import common as common_schemas
from cyborg_lite.api.schemas import validator
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF

LOG = logging.getLogger(__name__)

CONTEXT_KEY = 'cyborg_lite.context'
CONDUCTOR_KEY = 'cyborg_lite.conductor_api'
JSON = 'application/json'


def context(req):
    return req.environ[CONTEXT_KEY]


def conductor(req):
    """The conductor's RPC client (made on first use)."""
    return req.environ[CONDUCTOR_KEY]()


def publish_now(req, hostnames):
    """Have a conductor publish ``hostnames`` and wait until it has: the
    request took capacity away (stored, with its publish request, in
    db/publish_requests), and the schedulers must not offer it once the
    request answers. A conductor that cannot be reached in time, or a
    sink that failed, is logged: the change stands, and the conductors'
    periodic task publishes it."""
    if not hostnames:
        return
    try:
        done = conductor(req).publish_hosts(
            context(req), sorted(hostnames), timeout=CONF.api.publish_timeout)
    except Exception as exc:
        LOG.warning('No conductor published %s in time (%s); its periodic '
                    'task will', ', '.join(sorted(hostnames)), exc)
        return
    late = sorted(h for h, converged in done.items() if not converged)
    if late:
        LOG.warning('Publishing %s did not converge yet; the conductors '
                    'retry it', ', '.join(late))


def release(req, publish_hosts, clean_hosts, fallback):
    """Have a conductor publish the hosts of a release (an ARQ deleted or
    unbound) once and start the wipe of its regions: one call, answered
    once the schedulers have the capacity taken away (as ``publish_now``;
    the wipe starts after the answer; a conductor that cannot be reached
    in time is logged: its periodic tasks publish and clean). A conductor of the previous release (no
    release RPC) refuses it before doing anything: then ``publish_now``
    and ``fallback(req, clean_hosts)`` (the start of the cleaning)."""
    hosts = set(publish_hosts) | set(clean_hosts)
    if not hosts:
        return
    try:
        done = conductor(req).release(
            context(req), sorted(hosts), sorted(clean_hosts),
            timeout=CONF.api.publish_timeout)
    except messaging.UnsupportedVersion:
        publish_now(req, hosts)
        fallback(req, clean_hosts)
        return
    except Exception as exc:
        LOG.warning('No conductor released %s in time (%s); its periodic '
                    'task publishes them', ', '.join(sorted(hosts)), exc)
        # NOTE: the wipe need not wait for the periodic task: a cast
        # (starting a clean twice is harmless).
        fallback(req, clean_hosts)
        return
    late = sorted(h for h, converged in done.items() if not converged)
    if late:
        LOG.warning('Publishing %s did not converge yet; the conductors '
                    'retry it', ', '.join(late))


def request_publish(req, hostnames):
    """Ask a conductor to publish ``hostnames`` now: their offer changed
    and db/publish_requests holds them. Best effort (a cast): the
    conductors' periodic task publishes them anyway."""
    if not hostnames:
        return
    try:
        conductor(req).publish_requested(context(req))
    except Exception as exc:
        LOG.warning('Could not ask a conductor to publish %s now (%s); '
                    'its periodic task will', ', '.join(sorted(hostnames)),
                    exc)


def authorize(req, rule, target=None):
    """Policy check; the target defaults to the caller's own project (for
    lists and creates). Pass the object's {'project_id': ...} otherwise."""
    ctx = context(req)
    if target is None:
        target = {'project_id': ctx.project_id}
    policy.authorize(ctx, rule, target)


def visible_to(req):
    """What the caller may see: db pagination.ALL for an admin, else its
    own project (None when it has none: only public objects)."""
    from cyborg_lite.db.sql import pagination
    ctx = context(req)
    return pagination.ALL if ctx.is_admin else ctx.project_id


_UUID_RE = re.compile(common_schemas.UUID_PATTERN)


def is_uuid(value):
    return bool(_UUID_RE.fullmatch(value))


def require_uuid(value, not_found):
    """Raise ``not_found`` unless ``value`` (a path segment) is a uuid:
    nothing else can name the object, and the database never sees it."""
    if not is_uuid(value):
        raise not_found


def _check_text(value, field):
    # NOTE: PostgreSQL refuses NUL in text and no driver can encode a lone
    # surrogate; either would be a 500 deep in the database layer.
    if '\x00' in value:
        raise exception.InvalidField(field=field,
                                     reason='contains a NUL character')
    try:
        value.encode('utf-8')
    except UnicodeEncodeError:
        raise exception.InvalidField(field=field,
                                     reason='is not valid Unicode text')


def check_strings(data, field):
    """Apply _check_text to every string (keys too) inside ``data``."""
    if isinstance(data, str):
        _check_text(data, field)
    elif isinstance(data, dict):
        for key, value in data.items():
            _check_text(key, field)
            check_strings(value, '%s.%s' % (field, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            check_strings(value, '%s.%d' % (field, index))


def _field_name(error, root):
    path = [str(p) for p in error.absolute_path]
    if error.validator == 'required':
        # NOTE: for a missing property jsonschema's path is the parent;
        # the missing name is the first quoted word of the message.
        missing = error.message.split("'")[1] if "'" in error.message else ''
        path.append(missing)
    elif error.validator == 'additionalProperties' and "'" in error.message:
        path.append(error.message.split("'")[1])
    return '.'.join([root] + path) if path else root


def validate(data, schema, root):
    """Raise InvalidField naming the first bad field of ``data``."""
    if validator.accepts(schema, data):
        return
    error = js_exc.best_match(
        validator.for_schema(schema).iter_errors(data))
    if error is not None:
        raise exception.InvalidField(field=_field_name(error, root),
                                     reason=error.message)


def require_content_type(req, media_type, what='body'):
    """415 unless the body is declared as ``media_type`` (parameters such
    as charset allowed)."""
    declared = req.environ.get('CONTENT_TYPE', '')
    if declared.split(';', 1)[0].strip().lower() != media_type:
        raise webob.exc.HTTPUnsupportedMediaType(
            detail='Send the %s as Content-Type: %s, not %r.'
                   % (what, media_type, declared))


_DIGITS = re.compile('[0-9]+')


def declared_length(environ):
    """The body's Content-Length; None when none is declared. InvalidField
    unless it is a whole number of bytes in ASCII digits (int() would also
    take what a lenient WSGI server passes on: '+5', '1_0', '-1')."""
    text = environ.get('CONTENT_LENGTH', '')
    if not text:
        return None
    if not _DIGITS.fullmatch(text):
        raise exception.InvalidField(
            field='Content-Length', reason='%r is not a number of bytes'
                                           % text)
    return int(text)


def iter_exact(stream, length, chunk_size):
    """``length`` bytes of ``stream`` in chunks; never reads past them (a
    WSGI server may block there) and refuses a body that ends early: the
    client sent part of it and closed its side (both servers then give a
    short read)."""
    left = length
    while left:
        chunk = stream.read(min(chunk_size, left))
        if not chunk:
            raise exception.InvalidField(
                field='body', reason='ended after %d of the %d bytes its '
                                     'Content-Length announced'
                                     % (length - left, length))
        left -= len(chunk)
        yield chunk


def _unreadable(exc):
    # NOTE: webob's DisconnectionError, or the server's error for a chunked
    # body cut short or malformed (gunicorn's NoMoreData, an OSError;
    # cheroot's ValueError).
    return exception.InvalidField(
        field='body', reason='could not be read whole (%s)' % exc)


def iter_until_eof(stream, chunk_size):
    """The chunks of a body of no declared length (chunked); InvalidField
    when it is cut short or its chunks are malformed."""
    while True:
        try:
            chunk = stream.read(chunk_size)
        except (OSError, ValueError) as exc:
            raise _unreadable(exc)
        if not chunk:
            return
        yield chunk


def body(req):
    """The request body's bytes, all of them or an InvalidField (400): read
    as they are where the length is declared (webob's req.body first
    copies them into a buffer it can seek, a third of a small body's
    parsing), through webob otherwise (chunked bodies); left readable
    again in wsgi.input."""
    environ = req.environ
    length = declared_length(environ)
    if length is None or 'wsgi.input' not in environ:
        try:
            return req.body
        except (OSError, ValueError) as exc:
            raise _unreadable(exc)
    raw = b''.join(iter_exact(environ['wsgi.input'], length, length))
    environ['wsgi.input'] = io.BytesIO(raw)
    return raw


def json_body(req, schema, normalize=None):
    """The request body, parsed and valid against ``schema``.

    ``normalize(data)`` may tidy the parsed body before it is validated.
    A body not declared as JSON is a 415, as Nova and Placement answer
    (after the body size limit, which shows while reading a chunked body).
    """
    raw = body(req)
    require_content_type(req, JSON)
    try:
        data = json.loads(raw.decode('utf-8') if raw else '')
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise exception.InvalidField(
            field='body', reason='not a JSON document (%s)' % exc)
    # NOTE: json.loads takes no raw NUL or control character in a string
    # and UTF-8 has no surrogates: only a \u escape makes either.
    if b'\\u' in raw:
        check_strings(data, 'body')
    if normalize is not None:
        data = normalize(data)
    validate(data, schema, 'body')
    return data


def query(req, schema):
    """The query string as a dict of strings, valid against ``schema``."""
    params = {}
    for key in req.GET.keys():
        values = req.GET.getall(key)
        if len(values) > 1:
            raise exception.InvalidField(field=key,
                                         reason='given more than once')
        params[key] = values[0]
    check_strings(params, 'query')
    validate(params, schema, 'query')
    return params


def page(params, default_sort='created_at'):
    """limit/marker/sort_key/sort_dir from validated query ``params``."""
    limit = min(int(params['limit']), CONF.api.max_limit) \
        if 'limit' in params else CONF.api.max_limit
    return {'limit': limit, 'marker': params.get('marker'),
            'sort_key': params.get('sort_key', default_sort),
            'sort_dir': params.get('sort_dir', 'asc')}


_BASE_URL_KEY = 'cyborg_lite.base_url'


def base_url(req):
    """The API's URL as clients reach it; worked out once per request
    (list views build a link per row)."""
    url = req.environ.get(_BASE_URL_KEY)
    if url is None:
        url = (CONF.api.public_endpoint or req.application_url).rstrip('/')
        req.environ[_BASE_URL_KEY] = url
    return url


def link(req, resource, uuid):
    return [{'href': '%s/v2/%s/%s' % (base_url(req), resource, uuid),
             'rel': 'self'}]


# The JSON of ``link``'s list with its href left as %s (api/json_list.py).
LINK_TEMPLATE = '[{"href": %s, "rel": "self"}]'


def href_prefix(req, resource):
    """What ``link``'s href of a ``resource`` object is before its uuid."""
    return '%s/v2/%s/' % (base_url(req), resource)


def list_format(keys, raw=(), columns=None):
    """The json_list.RowFormat of a listed object with ``keys`` (those of
    its ``view``, in order): ``links`` is ``link``'s list of the href
    column (db pagination.list_columns); ``columns`` names the column of
    other keys whose column is named otherwise."""
    return json_list.RowFormat(keys, {'links': LINK_TEMPLATE}, raw=raw,
                               columns=dict(columns or {}, links='href'))


def timestamp(value):
    """ISO 8601 in UTC, as Cyborg shows times."""
    if value is None:
        return None
    return value.replace(microsecond=0).isoformat() + '+00:00'


def timestamps(row):
    return {'created_at': timestamp(row.created_at),
            'updated_at': timestamp(row.updated_at)}


class JsonResponse:
    """A response with a JSON body (or none), as a WSGI application: the
    status line and headers webob.Response gives it, without building
    one (a twentieth of a small POST's time). ``location`` sets the
    Location header, as on webob's."""

    def __init__(self, body, status):
        self.status = '%d %s' % (status, http.HTTPStatus(status).phrase)
        if body is None:
            self.body = b''
            self.headerlist = [('Content-Length', '0')]
        else:
            self.body = json.dumps(body).encode('utf-8')
            self.headerlist = [('Content-Type', JSON),
                               ('Content-Length', str(len(self.body)))]

    @property
    def location(self):
        return dict(self.headerlist).get('Location')

    @location.setter
    def location(self, url):
        self.headerlist.append(('Location', url))

    def __call__(self, environ, start_response):
        start_response(self.status, self.headerlist)
        return [self.body]


def response(body=None, status=200):
    return JsonResponse(body, status)


def _next_links(req, resource, limit, last_uuid):
    params = dict(req.GET)
    params['marker'] = last_uuid
    params['limit'] = str(limit)
    href = '%s/v2/%s?%s' % (base_url(req), resource,
                            urllib.parse.urlencode(params))
    return [{'href': href, 'rel': 'next'}]


def collection(key, items, req, resource, limit):
    """A list body; with ``<key>_links`` next when the page is full."""
    body = {key: items}
    if items and len(items) == limit:
        body[key + '_links'] = _next_links(req, resource, limit,
                                           items[-1]['uuid'])
    return body


def collection_response(key, items_pieces, rows, req, resource, limit):
    """The response of ``collection`` for items already encoded
    (api/json_list.py): ``items_pieces`` the text of the objects of the
    list, without brackets, in pieces, from ``rows`` whose first value is
    the uuid. The same bytes as ``response(collection(...))`` of the same
    items."""
    tail = ']'
    if rows and len(rows) == limit:
        tail += ', %s: %s' % (json.dumps(key + '_links'), json.dumps(
            _next_links(req, resource, limit, rows[-1][0])))
    # NOTE: the items are megabytes; they are not copied into one string.
    parts = [('{%s: [' % json.dumps(key)).encode('ascii')]
    parts += [piece.encode('ascii') for piece in items_pieces]
    parts.append((tail + '}').encode('ascii'))
    resp = webob.Response(status=200, charset=None)
    resp.content_type = JSON
    resp.app_iter = parts
    resp.content_length = sum(len(part) for part in parts)
    return resp
