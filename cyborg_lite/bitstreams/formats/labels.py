"""Text taken from an image header before it is stored or shown.

Header text (a function or kernel name, a platform name) is written by
whoever built the file. It is refused, not cleaned, when it could not be
stored as it is: longer than the database column, holding a control
character (NUL, which PostgreSQL rejects in text, escapes, newlines) or a
lone surrogate (which no UTF-8 database can store). A silently altered
name would no longer be what the vendor's tools show for the same file.
"""
import unicodedata

# The width of the name columns (function_name, vendor... String(255)).
MAX_LEN = 255
_REFUSED_CATEGORIES = {'Cc': 'a control character',
                       'Cs': 'a lone surrogate'}


def check(value, field, fail):
    """``value`` if it can be stored as it is; else ``fail(reason)``."""
    if len(value) > MAX_LEN:
        fail('%s is %d characters long, more than the %d allowed'
             % (field, len(value), MAX_LEN))
    for index, char in enumerate(value):
        kind = _REFUSED_CATEGORIES.get(unicodedata.category(char))
        if kind:
            fail('%s holds %s (U+%04X at character %d)'
                 % (field, kind, ord(char), index))
    return value
