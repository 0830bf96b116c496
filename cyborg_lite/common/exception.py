"""Domain exceptions. No HTTP here: the API maps these to status codes.

Each class has a message template filled from keyword arguments; ``code``
is the HTTP status the API edge uses when it translates the exception.
Areas append their own classes in their own section below.
"""


class CyborgLiteException(Exception):
    """Base class; ``msg_fmt % kwargs`` is the message."""

    msg_fmt = 'An unknown exception occurred.'
    code = 500

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError):
                # NOTE: a wrong template must not hide the original error.
                message = self.msg_fmt
        self.message = str(message)
        super().__init__(self.message)

    def format_message(self):
        return self.message


# --- generic -------------------------------------------------------------

class Invalid(CyborgLiteException):
    msg_fmt = 'Invalid input: %(reason)s'
    code = 400


class NotFound(CyborgLiteException):
    msg_fmt = 'Resource could not be found.'
    code = 404


class Conflict(CyborgLiteException):
    msg_fmt = 'Conflict: %(reason)s'
    code = 409


class Forbidden(CyborgLiteException):
    msg_fmt = 'Policy does not allow this operation.'
    code = 403


# --- configuration and database -----------------------------------------

class ConfigError(CyborgLiteException):
    msg_fmt = 'Configuration error: %(reason)s'


class DatabaseURLError(ConfigError):
    msg_fmt = ('Unsupported database URL %(url)r: %(reason)s. Use sqlite:///'
               'path, postgresql://user:password@host/db or '
               'mysql+pymysql://user:password@host/db.')


class StaleObject(Conflict):
    msg_fmt = ('%(kind)s %(uuid)s was changed by someone else; reload and '
               'retry.')


# --- drivers and programming ----------------------------------------------

class DriverError(CyborgLiteException):
    msg_fmt = 'Driver %(driver)s failed: %(reason)s'


class ProgrammingError(CyborgLiteException):
    msg_fmt = 'Programming failed: %(reason)s'
