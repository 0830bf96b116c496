"""validator.accepts (jsonschema-rs) against for_schema (jsonschema with
our two rules): on every schema the API validates with, a document the
fast test accepts is one the reference accepts, and the other way round
for documents without floats, which the fast test leaves to the
reference by design."""
import functools
import importlib
import pkgutil
import re

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from cyborg_lite.api import schemas as schemas_pkg
from cyborg_lite.api.schemas import accelerator_requests
from cyborg_lite.api.schemas import device_profiles
from cyborg_lite.api.schemas import validator

KEYWORDS = {'type', 'oneOf', 'anyOf', 'allOf', 'not', 'enum', 'const',
            'properties', 'items', 'pattern'}


def _all_schemas():
    found = []
    for info in pkgutil.iter_modules(schemas_pkg.__path__):
        if info.name == 'validator':
            continue
        module = importlib.import_module(
            '%s.%s' % (schemas_pkg.__name__, info.name))
        for name, value in vars(module).items():
            if name.isupper() and isinstance(value, dict) \
                    and KEYWORDS & set(value):
                found.append(pytest.param(value,
                                          id='%s.%s' % (info.name, name)))
    return found


SCHEMAS = _all_schemas()

_scalars = (st.none() | st.booleans() | st.integers()
            | st.integers(min_value=-2 ** 70, max_value=2 ** 70)
            | st.integers(min_value=-3, max_value=3).map(float)
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(max_size=8))
_any_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6)


def _string(schema):
    pattern = schema.get('pattern')
    if pattern is None:
        low = schema.get('minLength', 0)
        high = schema.get('maxLength', low + 10)
        return st.text(min_size=max(0, low - 1),
                       max_size=min(high + 1, low + 20))
    matching = st.from_regex(validator.whole_string_pattern(pattern),
                             fullmatch=True)
    # Near misses: a trailing newline, a stray character either side.
    return matching | matching.map(lambda s: s + '\n') \
        | st.tuples(st.text(max_size=2), matching).map(''.join)


def _integer(schema):
    low = schema.get('minimum', -10)
    high = schema.get('maximum', low + 100)
    return st.integers(min_value=low - 2, max_value=high + 2) \
        | st.integers(min_value=low - 2, max_value=low + 2)


def _object(schema, depth):
    """Objects of any of the schema's own properties and of keys its
    patternProperties match, with or without one unknown key."""
    known = st.fixed_dictionaries({}, optional={
        key: near(sub, depth + 1)
        for key, sub in schema.get('properties', {}).items()})
    patterned = [
        st.dictionaries(
            st.from_regex(validator.whole_string_pattern(p), fullmatch=True),
            near(sub, depth + 1), max_size=3)
        for p, sub in schema.get('patternProperties', {}).items()]
    unknown = st.dictionaries(st.text(max_size=6), _any_json, max_size=1)

    def merged(dicts):
        return {k: v for d in dicts for k, v in d.items()}

    return st.tuples(known, *patterned).map(merged) \
        | st.tuples(known, *patterned, unknown).map(merged)


def near(schema, depth=0):
    """Documents close to ``schema``: mostly valid, some one step off."""
    if not isinstance(schema, dict) or depth > 5:
        return _any_json
    options = [_any_json]
    for key in ('oneOf', 'anyOf', 'allOf'):
        if key in schema:
            options += [near(sub, depth + 1) for sub in schema[key]]
    if 'enum' in schema:
        options.append(st.sampled_from(schema['enum']))
    if 'const' in schema:
        options.append(st.just(schema['const']))
    types = schema.get('type', ())
    types = [types] if isinstance(types, str) else list(types)
    for kind in types:
        if kind == 'string':
            options.append(_string(schema))
        elif kind == 'integer':
            # 1.0 is JSON Schema's integer, not ours.
            options.append(_integer(schema) | _integer(schema).map(float))
        elif kind == 'number':
            options.append(_integer(schema) | _integer(schema).map(float))
        elif kind == 'boolean':
            options.append(st.booleans())
        elif kind == 'null':
            options.append(st.none())
        elif kind == 'array':
            low = schema.get('minItems', 0)
            high = min(schema.get('maxItems', low + 3), low + 3)
            options.append(st.lists(near(schema.get('items', {}), depth + 1),
                                    min_size=max(0, low - 1),
                                    max_size=high + 1))
        elif kind == 'object':
            options.append(_object(schema, depth))
    if 'properties' in schema and 'object' not in types:
        options.append(_object(schema, depth))
    return st.one_of(options)


# One strategy per schema for the whole run: building it again for every
# example cost more than drawing from it.
_NEAR = {}


def _near_once(schema):
    key = id(schema)
    if key not in _NEAR:
        _NEAR[key] = near(schema)
    return _NEAR[key]


def _reference_valid(schema, data):
    return not any(True for _ in
                   validator.for_schema(schema).iter_errors(data))


@pytest.mark.parametrize('schema', SCHEMAS)
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow,
                                 HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_fast_test_agrees_with_the_reference(schema, data):
    document = data.draw(_near_once(schema))
    fast = validator.accepts(schema, document)
    reference = _reference_valid(schema, document)
    if fast:
        assert reference, document
        assert not validator._holds_float(document)
    elif not validator._holds_float(document):
        assert not reference, document


@pytest.mark.parametrize('schema,document', [
    (device_profiles.CREATE,
     [{'name': 'gzip', 'groups': [{'resources:FPGA': '1',
                                   'trait:CUSTOM_FPGA_INTEL': 'required'}]}]),
    (accelerator_requests.CREATE, {'device_profile_name': 'gzip'}),
])
def test_fast_test_takes_the_common_bodies(schema, document):
    assert validator.accepts(schema, document)


@pytest.mark.parametrize('document', [
    # JSON Schema's integer takes 1.0; ours does not.
    [{'name': 'a', 'groups': [{'resources:FPGA': 1.0}]}],
    [{'name': 'a', 'groups': [{'resources:FPGA': True}]}],
    [{'name': 'a\n', 'groups': [{'resources:FPGA': 1}]}],
    [{'name': 'a', 'groups': [{'resources:FPGA\n': 1}]}],
    [{'name': 'a', 'groups': [{'resources:FPGA': 2 ** 80}]}],
])
def test_fast_test_leaves_the_bad_ones_to_the_reference(document):
    assert not validator.accepts(device_profiles.CREATE, document)
    assert not _reference_valid(device_profiles.CREATE, document)


def _patterns(schema, found):
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == 'pattern' and isinstance(value, str):
                found.add(value)
            elif key == 'patternProperties':
                found.update(value)
            _patterns(value, found)
    elif isinstance(schema, list):
        for value in schema:
            _patterns(value, found)
    return found


PATTERNS = sorted(_patterns([p.values[0] for p in SCHEMAS], set()))


@functools.lru_cache(maxsize=None)
def _texts_near(pattern):
    python = re.compile(validator.whole_string_pattern(pattern))
    return st.from_regex(python, fullmatch=True).flatmap(
        lambda s: st.sampled_from([s, s + '\n', '\n' + s, s + 'x',
                                   s[:-1], s.upper(), s.lower()])) \
        | st.text(max_size=12)


@functools.lru_cache(maxsize=None)
def _string_schema(pattern):
    """One schema dict per pattern: accepts() compiles a schema once per
    dict (by identity), so a new dict for each text compiled it again."""
    return {'type': 'string', 'pattern': pattern}


@pytest.mark.parametrize('pattern', PATTERNS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_patterns_read_alike(pattern, data):
    python = re.compile(validator.whole_string_pattern(pattern))
    text = data.draw(_texts_near(pattern))
    fast = validator.accepts(_string_schema(pattern), text)
    assert fast == bool(python.search(text)), text


@pytest.mark.parametrize('pattern', PATTERNS)
def test_patterns_agree_on_every_single_character(pattern):
    """Hypothesis once drew '\\x1f', which Python's \\s holds and the fast
    path's does not; every code point of the BMP's first blocks, alone,
    reads alike."""
    python = re.compile(validator.whole_string_pattern(pattern))
    schema = _string_schema(pattern)
    differ = [hex(cp) for cp in range(0x3100)
              if validator.accepts(schema, chr(cp))
              != bool(python.search(chr(cp)))]
    assert differ == []
