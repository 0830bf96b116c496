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


def error_text(exc):
    """What to tell a peer of a failure: our message, or the type and
    text of anything else."""
    if isinstance(exc, CyborgLiteException):
        return exc.format_message()
    return '%s: %s' % (type(exc).__name__, exc)


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


class DatabaseUnavailable(CyborgLiteException):
    """The database cannot be reached (refused, disconnected); the detail
    is in the service's log, never in what a caller is shown."""
    msg_fmt = 'The database is unavailable; try again later.'
    code = 503


class StaleObject(Conflict):
    msg_fmt = ('%(kind)s %(uuid)s was changed by someone else; reload and '
               'retry.')


# --- drivers and programming ----------------------------------------------

class DriverError(CyborgLiteException):
    msg_fmt = 'Driver %(driver)s failed: %(reason)s'


class InstanceBusy(DriverError):
    """An instance cannot be removed yet: a guest still has it open. Try
    again later; nothing was changed."""
    msg_fmt = '%(what)s is still open in a guest: %(reason)s'


class InstanceNotMade(CyborgLiteException):
    """An agent made no instance (a vGPU) for a bind, or removed none;
    nothing was changed on the host."""
    msg_fmt = 'No instance made on %(host)s: %(reason)s'


class InstancesUnsupported(InstanceNotMade):
    """The host's agent runs a release that neither makes nor removes
    instances (agent RPC below 1.4); nothing was sent or changed."""


class ProgrammingError(CyborgLiteException):
    msg_fmt = 'Programming failed: %(reason)s'


class CleaningError(CyborgLiteException):
    """Wiping a deployable between tenants failed or is not possible."""
    msg_fmt = 'Cleaning failed: %(reason)s'


# --- bitstreams (helper) ---------------------------------------------------

class InvalidBitstream(Invalid):
    msg_fmt = 'Invalid %(format)s file: %(reason)s'


class BitstreamHeaderMismatch(Invalid):
    msg_fmt = ('The file header contradicts the declared %(field)s: the '
               'header says %(header)r, the metadata says %(declared)r.')


class ChecksumMismatch(Invalid):
    msg_fmt = ('sha256 mismatch: declared %(declared)s, the bytes hash to '
               '%(actual)s.')


class ImageTooLarge(Invalid):
    msg_fmt = 'The image is larger than the limit of %(limit)d bytes.'
    code = 413


class ImageNotFound(NotFound):
    msg_fmt = 'No stored image has sha256 %(sha256)s.'


class BitstreamNotFound(NotFound):
    msg_fmt = 'Bitstream %(uuid)s could not be found.'


class BitstreamInUse(Conflict):
    msg_fmt = 'Bitstream %(uuid)s cannot be deleted: %(reason)s'


class ProgrammingJobNotFound(NotFound):
    msg_fmt = 'Programming job %(uuid)s could not be found.'


class RegionBusy(Conflict):
    msg_fmt = ('Region %(region)s already has an active programming job '
               '%(job)s; wait for it to end or cancel it.')


class JobStateConflict(Conflict):
    msg_fmt = ('Programming job %(uuid)s is %(state)s; %(action)s needs one '
               'of: %(expected)s.')


class DeviceUnhealthy(Conflict):
    msg_fmt = ('Device %(uuid)s is unhealthy since %(since)s: %(reason)s. '
               'It is offered again on its own once its signals stay '
               'clear; enabling it cannot override its fault.')


class CleaningConflict(Conflict):
    """An agent's report of a cleaning try that is no longer current."""
    msg_fmt = ('Cleaning try %(try_uuid)s of deployable %(uuid)s is no '
               'longer current (the deployable is %(state)s); %(action)s '
               'is refused.')


# --- placement (helper) ---------------------------------------------------

class PlacementError(CyborgLiteException):
    msg_fmt = 'Placement %(method)s %(url)s failed: %(status)s %(detail)s'


class PlacementUnavailable(PlacementError):
    """Placement could not be reached or answered 5xx: retry later."""
    msg_fmt = 'Placement is unavailable (%(method)s %(url)s): %(reason)s'
    code = 503


class PlacementConflict(PlacementError):
    """409: a generation changed under us, or a name/uuid is taken."""
    code = 409


class ComputeNodeNotFound(PlacementError):
    msg_fmt = ('No resource provider named %(hostname)s in Placement and '
               '[placement]create_compute_node_rp is off.')
    code = 404


# --- drivers (helper) -----------------------------------------------------

class HostDataError(DriverError):
    """One file or tool answer on the host is unreadable or malformed.

    Drivers raise it for one device or one field and catch it at the
    device level, so garbage in one card never hides the other cards.
    """
    msg_fmt = 'Unreadable host data at %(where)s: %(reason)s'


# --- api (helper) ------------------------------------------------------------

class NotAcceptable(CyborgLiteException):
    msg_fmt = 'Not acceptable: %(reason)s'
    code = 406


class RequestTooLarge(CyborgLiteException):
    msg_fmt = 'Request body is larger than the limit of %(limit)d bytes.'
    code = 413


class Locked(CyborgLiteException):
    msg_fmt = 'Locked: %(reason)s'
    code = 423


class InvalidField(Invalid):
    """A request field with a bad value; ``field`` names it."""
    msg_fmt = 'Invalid value for %(field)s: %(reason)s'


class DeviceNotFound(NotFound):
    msg_fmt = 'Device %(uuid)s could not be found.'


class DeployableNotFound(NotFound):
    msg_fmt = 'Deployable %(uuid)s could not be found.'


class AttributeNotFound(NotFound):
    msg_fmt = 'Attribute %(uuid)s could not be found.'


class DeviceProfileNotFound(NotFound):
    msg_fmt = 'Device profile %(ident)s could not be found.'


class ARQNotFound(NotFound):
    msg_fmt = 'Accelerator request %(uuid)s could not be found.'


class MarkerNotFound(InvalidField):
    msg_fmt = 'Invalid value for marker: no item %(marker)s in this list.'


class DuplicateName(Conflict):
    msg_fmt = 'A %(kind)s named %(name)s already exists.'


class AttributeExists(Conflict):
    msg_fmt = ('Deployable %(deployable_id)s already has an attribute '
               '%(key)s.')


class DeviceProfileInUse(Conflict):
    msg_fmt = ('Device profile %(ident)s is used by %(count)d accelerator '
               'request(s); delete them first.')


class ARQStateConflict(Conflict):
    msg_fmt = ('Accelerator request %(uuid)s is %(state)s; %(action)s needs '
               'one of: %(expected)s.')


class InstanceHasARQs(Conflict):
    msg_fmt = ('Instance %(instance)s already has accelerator requests; '
               'more cannot be bound to it.')


# --- bind (helper) ---------------------------------------------------------
# NOTE: ARQNotFound and ARQStateConflict above serve the bind workflow too.

class ArqBindFailed(CyborgLiteException):
    msg_fmt = 'Binding accelerator request %(uuid)s failed: %(reason)s'


class NotifierNotFound(ConfigError):
    msg_fmt = ('Unknown bind notifier %(name)r: use one of %(known)s or a '
               '"package.module:Class" path.')


# --- agent/conductor (helper) ---------------------------------------------

class InvalidReport(Invalid):
    msg_fmt = 'Report from host %(host)s rejected: %(reason)s'


class ReportConflict(Conflict):
    msg_fmt = ('Report from host %(host)s could not be applied after '
               '%(attempts)d attempts because other writers kept changing '
               'the same rows: %(reason)s')


# --- programming flow (helper) --------------------------------------------

class NoBitstreamForFunction(NotFound):
    msg_fmt = ('No active bitstream visible to this project provides '
               'function %(function_id)s for region type %(region_type)s.')


class AmbiguousFunction(Conflict):
    msg_fmt = ('Function %(function_id)s for region type %(region_type)s is '
               'provided by several different bitstreams (%(uuids)s); ask '
               'for one with accel:bitstream_id.')


class ClaimRefused(Conflict):
    """A region cannot be prepared for a Kubernetes ResourceClaim now."""
    msg_fmt = ('ResourceClaim %(claim)s cannot have %(device)s: '
               '%(reason)s')


class ClaimInProgress(CyborgLiteException):
    """A device of a claim is still being prepared (programming); the
    kubelet retries and the next call picks the work up."""
    msg_fmt = ('ResourceClaim %(claim)s: %(device)s is still being '
               'prepared (%(reason)s); retry')


# --- signed bitstreams -------------------------------------------------------

class TrustedKeyNotFound(NotFound):
    msg_fmt = 'Trusted key %(uuid)s could not be found.'


class TrustedKeyExists(Conflict):
    msg_fmt = ('Key %(key_id)s is registered already (%(uuid)s, '
               '%(state)s); a key is registered once.')


class SignatureRefused(Conflict):
    """The conductor's check before a job: the signature policy refuses
    the bitstream's signature status."""
    msg_fmt = ('Signature check before programming refused bitstream '
               '%(uuid)s: its signature is %(status)s (%(reason)s) and the '
               'signature policy of %(scope)s is %(policy)s.')


class SignatureCheckFailed(ProgrammingError):
    """The agent's check over the bytes it is about to write."""
    msg_fmt = ('Signature check on the agent failed for bitstream '
               '%(uuid)s: %(reason)s')


class ServiceTooOld(CyborgLiteException):
    """A service of a release older than the previous one: it may not run
    beside this code (common/version.too_old); raised where it starts or
    is heard (the conductor's start, an agent's heartbeat)."""
    msg_fmt = ('%(kind)s on %(host)s runs release %(release)s, older than '
               '%(oldest)s, the oldest release %(this)s runs beside: '
               'upgrade it to %(oldest)s first.')
