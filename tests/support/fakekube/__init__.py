"""A faithful in-process fake of the Kubernetes REST API, for tests (never shipped in ``apiserver``).

What it serves (plain HTTP on 127.0.0.1, HTTPS when ``start(ssl_context=...)`` is given):

* the object paths of core (namespaces, configmaps, persistentvolumeclaims), apps/v1
  controllerrevisions, kubevirt.io/v1 (virtualmachines, virtualmachineinstancepresets, kubevirts),
  instancetype.kubevirt.io/v1beta1 (the four kinds), cdi.kubevirt.io/v1beta1 (datavolumes,
  datasources) and snapshot.storage.k8s.io/v1 (volumesnapshots); the legacy flavor kinds are in
  ``FLAVOR_RESOURCES`` and only served when passed in ``resources``;
* discovery (``/api``, ``/api/v1``, ``/apis``, ``/apis/<g>``, ``/apis/<g>/<v>``), so a CRD that is not
  installed is missing there and its paths answer kube-apiserver's plain-text 404 "404 page not found"
  (not a Status);
* GET, LIST (``labelSelector`` with sets and negation, a malformed one 400; ``fieldSelector`` on
  metadata.name/namespace, other field labels 400;
  ``limit``/``continue`` (a bad token 400; custom resources' lists always carry ``continue``),
  ``resourceVersion``/``resourceVersionMatch``, a future one 504 "Too large resource version" with
  Retry-After; items of built-in types without kind/apiVersion, as kube-apiserver sends them) and WATCH
  (``resourceVersion``, ``allowWatchBookmarks``, ``timeoutSeconds``; a BOOKMARK after ``bookmark_interval``
  seconds of silence, only when the kind changed since the (re)start and after the watch's own version,
  with that change's version, as kube-apiserver's watch cache does it (every minute and 2 s before the
  timeout there); a resourceVersion older than the last
  :meth:`compact` or restart gets the ERROR event with a 410 Expired Status, as kube-apiserver sends it);
* resourceVersions from one global counter; Status errors with kube-apiserver's texts and details
  (``virtualmachineinstancetypes.instancetype.kubevirt.io "x" not found``);
* an optional bearer token (``FakeKube(token=...)``, changeable at run time: 401 on a mismatch), and
  restricted users (``grant(token, user, rules)``: RBAC's 403 Forbidden for anything else);
* JSON answers labelled ``application/json`` exactly, as kube-apiserver labels them.

tests/parity/test_fake_fidelity.py compares these behaviours with a real kube-apiserver's.

Objects are written from the test through Python (:meth:`FakeKube.create`, ``update``, ``apply``,
``delete``, ``update_status``), which bumps the resourceVersion and notifies the open watches at once.
A kind whose CRD declares the status subresource (``ResourceType.status_subresource``: the
VirtualMachine, as KubeVirt's own CRD does) is written as kube-apiserver writes it: ``create`` and
``update`` keep the status it had (none on create), ``update_status`` (``/status``) writes only the
status, and the generation moves when anything but metadata changed (for a kind without the subresource,
its status too). ``testing.stored_vm`` stores a VM as on a cluster running KubeVirt: created, then its
status written as virt-controller writes it.

Fault injection: ``fail(status, count=, path_contains=, verbs=, retry_after=)``, ``delay(seconds, ...)``,
``clear_faults()``, ``drop_watches(abort=False|True)``, ``compact()``, ``expire_watches()``, and
``stop()`` / ``start()`` (same port, objects kept, a fresh watch cache as after a real restart). Every request is recorded in ``log``
(:class:`RequestRecord`: method, path, query, verb get/list/watch/discovery/..., resource, namespace, name,
status); ``count(verb, resource=, name=, path=)`` counts them.

Extension point (for endpoints beyond reads, e.g. TokenReview/SubjectAccessReview in ``reviews.py``):
``fake.add_handler(method, path, handler)`` registers an aiohttp handler before ``start()``; it takes
precedence over the built-in paths, is logged (verb "create" for POST) and subject to faults and the token
check, and survives ``stop()``/``start()``.
"""

from tests.support.fakekube.resources import DEFAULT_RESOURCES, FLAVOR_RESOURCES, ResourceType
from tests.support.fakekube.server import FakeKube, Fault, Latency, RequestRecord, status_body

__all__ = [
    "DEFAULT_RESOURCES",
    "FLAVOR_RESOURCES",
    "FakeKube",
    "Fault",
    "Latency",
    "RequestRecord",
    "ResourceType",
    "status_body",
]
