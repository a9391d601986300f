"""Object names and namespaces as Kubernetes validates them, checked before a name becomes a ref.

A ref's name and namespace end up as URL path segments in the cluster source; a name like ``.`` or
``..`` would change what the URL means (a list, a discovery document). Kubernetes never stores an
object under a name its validation refuses, so such a name is the request's mistake, answered 422 on
the field it came from, and nothing is read for it. Which rule applies to which kind (k8s.io/kubernetes
and apiextensions-apiserver at v1.28):

* every kind read here is named as a DNS-1123 subdomain (``NameIsDNSSubdomain``): custom resources
  (VirtualMachines, instancetypes, preferences, presets, the KubeVirt CR, CDI's DataVolumes and
  DataSources, VolumeSnapshots: apiextensions validates their names so), PersistentVolumeClaims
  (``ValidatePersistentVolumeName``) and ControllerRevisions (``ValidateControllerRevisionName``);
* namespaces are DNS-1123 labels (``ValidateNamespaceName``).

The texts are apimachinery's (``IsDNS1123Subdomain``, ``IsDNS1123Label``, ``field.Invalid``).
"""

from __future__ import annotations

import re

from apiserver.render.golang.gotext import go_quote
from apiserver.render.kubernetes.errors import CAUSE_INVALID, CAUSE_REQUIRED, Cause, ExpandError

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + "(\\." + _LABEL_FMT + ")*"
_LABEL_RE = re.compile(_LABEL_FMT)
_SUBDOMAIN_RE = re.compile(_SUBDOMAIN_FMT)
LABEL_MAX = 63
SUBDOMAIN_MAX = 253

_SUBDOMAIN_ERROR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    f"must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    f"'{_SUBDOMAIN_FMT}')"
)
# apimachinery's RegexError writes two spaces before the second example.
_LABEL_ERROR = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    f"and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    f"'{_LABEL_FMT}')"
)
# client-go's text for a Get without a name, which KubeVirt passes on.
EMPTY_NAME = "resource name may not be empty"


def _max_len(length: int) -> str:
    return f"must be no more than {length} characters"


def _errors(value: str, max_len: int, pattern: re.Pattern[str], message: str) -> list[str]:
    errors = []
    if len(value) > max_len:
        errors.append(_max_len(max_len))
    if not pattern.fullmatch(value):
        errors.append(message)
    return errors


def subdomain_errors(value: str) -> list[str]:
    """``validation.IsDNS1123Subdomain``: what is wrong with ``value`` as an object name."""
    return _errors(value, SUBDOMAIN_MAX, _SUBDOMAIN_RE, _SUBDOMAIN_ERROR)


def label_errors(value: str) -> list[str]:
    """``validation.IsDNS1123Label``: what is wrong with ``value`` as a namespace name."""
    return _errors(value, LABEL_MAX, _LABEL_RE, _LABEL_ERROR)


def is_subdomain(value: str) -> bool:
    """Whether :func:`subdomain_errors` has nothing to say of ``value`` (one match, no list made)."""
    return len(value) <= SUBDOMAIN_MAX and _SUBDOMAIN_RE.fullmatch(value) is not None


def is_label(value: str) -> bool:
    """Whether :func:`label_errors` has nothing to say of ``value``."""
    return len(value) <= LABEL_MAX and _LABEL_RE.fullmatch(value) is not None


def invalid_value(field: str, value: str, errors: list[str], *, name: str = "") -> ExpandError:
    """The 422 for a value apimachinery refuses: one cause per error, worded as ``field.Invalid``."""
    causes = [Cause(field, f"Invalid value: {go_quote(value)}: {e}", CAUSE_INVALID) for e in errors]
    message = ", ".join(f"{c.field}: {c.message}" for c in causes)
    return ExpandError.invalid(message, *causes, name=name)


def check_name(name: str, field: str) -> None:
    """Raise the 422 naming ``field`` unless ``name`` is a valid object name (and not empty)."""
    if not name:
        raise ExpandError.invalid(EMPTY_NAME, Cause(field, EMPTY_NAME, CAUSE_REQUIRED))
    errors = subdomain_errors(name)
    if errors:
        raise invalid_value(field, name, errors)


def check_namespace(namespace: str, field: str) -> None:
    """Raise the 422 naming ``field`` unless ``namespace`` is empty or a valid namespace name."""
    if namespace:
        errors = label_errors(namespace)
        if errors:
            raise invalid_value(field, namespace, errors)


def valid_name(name: str) -> bool:
    return bool(name) and not subdomain_errors(name)


def valid_namespace(namespace: str) -> bool:
    return bool(namespace) and not label_errors(namespace)
