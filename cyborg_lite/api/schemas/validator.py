"""How the API runs its JSON Schemas: Draft 2020-12, with two rules that
keep Python from reading them more loosely than JSON Schema means.

- An ``integer`` is a Python int and not a bool. (JSON Schema also takes
  0.0 and 1e2, numbers with a zero fraction; code given 0.0 as an index
  or a count fails.)
- A ``pattern`` (and a ``patternProperties`` key) is an ECMA-262 regex,
  where ``$`` ends the string; Python's ``$`` also matches before a final
  newline, so ``'^[0-9a-f]{64}$'`` would take a hash followed by ``\\n``.
  The schemas keep the standard form (docs/api/openapi.yaml publishes
  them); the validator runs each ``$`` as ``\\Z``.

``for_schema`` is that validator (the jsonschema library): it names the
first bad field. ``accepts`` is the fast test that runs first: the same
schema compiled by jsonschema-rs, about 100 times faster. It reads the
schema exactly as written (ECMA-262 ``$``, JSON's types: ``true`` is not
``1``), which is these rules, except that JSON Schema counts 1.0 as an
integer; so a document holding a float is never judged by it. Anything
it does not accept goes to ``for_schema``, which decides and explains.
"""
import jsonschema
import jsonschema_rs


def _is_integer(checker, instance):
    return isinstance(instance, int) and not isinstance(instance, bool)


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        'integer', _is_integer))


def whole_string_pattern(pattern):
    """``pattern`` with each ``$`` outside a character class as ``\\Z``."""
    out = []
    escaped = False
    class_start = None   # index of the '[' of the class we are in
    for index, char in enumerate(pattern):
        if escaped:
            escaped = False
        elif char == '\\':
            escaped = True
        elif class_start is not None:
            # A ']' first in the class ('[]a]', '[^]a]') is a member.
            negated = pattern[class_start + 1:class_start + 2] == '^'
            first = class_start + (2 if negated else 1)
            if char == ']' and index > first:
                class_start = None
        elif char == '[':
            class_start = index
        elif char == '$':
            char = '\\Z'
        out.append(char)
    return ''.join(out)


def _python_schema(schema):
    """A copy of ``schema`` with its regexes as whole_string_pattern."""
    if isinstance(schema, list):
        return [_python_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result = {}
    for key, value in schema.items():
        if key == 'pattern' and isinstance(value, str):
            value = whole_string_pattern(value)
        elif key == 'patternProperties' and isinstance(value, dict):
            value = {whole_string_pattern(k): _python_schema(v)
                     for k, v in value.items()}
        else:
            value = _python_schema(value)
        result[key] = value
    return result


def _built_once(cache, schema, build):
    """``build(schema)``, made once per schema (they are module
    constants): ``cache`` maps id(schema) to (schema, built), the schema
    kept so that its id is never reused."""
    entry = cache.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = cache[id(schema)] = (schema, build(schema))
    return entry[1]


_validators = {}


def for_schema(schema):
    """The validator of ``schema``."""
    return _built_once(_validators, schema,
                       lambda s: _Validator(_python_schema(s)))


_fast = {}
# What jsonschema-rs refuses to convert (a value JSON has no form for).
_UNCONVERTIBLE = (ValueError, TypeError, OverflowError)


def _fast_validator(schema):
    return _built_once(_fast, schema, lambda s: jsonschema_rs.
                       Draft202012Validator(s, validate_formats=False))


def _holds_float(data):
    # NOTE: a loop, not recursion: json.loads takes documents nested
    # nearly as deep as the recursion limit.
    pending = [data]
    while pending:
        value = pending.pop()
        if isinstance(value, float):
            return True
        if isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return False


def accepts(schema, data):
    """True when ``data`` is certainly valid against ``schema``; False
    means "ask for_schema", not "invalid"."""
    if _holds_float(data):
        return False
    try:
        return _fast_validator(schema).is_valid(data)
    except _UNCONVERTIBLE:
        return False
