"""Reading the VirtualMachine of a PUT body: media type, size, parsing, field validation, namespace.

The bytes go through the reader the command line and the folder source use
(:mod:`apiserver.documents.reader`): JSON first, then YAML, whatever ``Content-Type`` says among
the types accepted (YAML is a superset of JSON, and ``kubectl replace --raw -f vm.yaml`` sends a
YAML file labelled JSON); a body without ``Content-Type`` is read the same way (KubeVirt answers it
415; we accept it). Other media types are 415, as kube-apiserver answers them. Empty documents around
the VM (a trailing ``---``) are skipped; several documents are one 400 naming each.

Large bodies are parsed on a worker thread (:func:`offload`), so other requests are answered
meanwhile; the request deadline still applies (the request gives up waiting at its deadline).

Each failure is the Status the contract names: 415, 413, 400 for bytes that are not one JSON/YAML
document (where and why: document, line, field), 422 with field causes for a body that is not a valid
VirtualMachine at the chosen ``fieldValidation`` level or names another namespace.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from aiohttp import web

from apiserver.documents.reader import Document, DocumentError, read_documents
from apiserver.http.errors import (
    StatusError,
    bad_request,
    too_large,
    unsupported_encoding,
    unsupported_media_type,
)
from apiserver.http.transport.budget import DEFAULT_PACE, BodyPace
from apiserver.render.admission.schema import validate_schema
from apiserver.render.golang.gojson import syntax
from apiserver.render.kubernetes.errors import CAUSE_INVALID, Cause, ExpandError, invalid_status, status
from apiserver.render.kubernetes.fieldvalidation import (
    DEFAULT,
    IGNORE,
    LEVELS,
    WARN,
    FieldValidationError,
    admit,
    invalid_message,
    vm_name,
)

JSON_TYPES = ("application/json",)
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")
ACCEPTED = ("application/json", "application/yaml")

# Bodies above this are parsed (and the VM in them rendered and encoded) on a worker thread. A
# 64 KiB YAML body takes about 10 ms to read, JSON a fraction of that.
OFFLOAD_BYTES = 64 * 1024

T = TypeVar("T")
_POOL: concurrent.futures.ThreadPoolExecutor | None = None


async def offload(fn: Callable[[], T]) -> T:
    """Run ``fn`` on the worker thread. One thread: large bodies take turns (each keeps its deadline;
    one still queued when its request gives up never runs), and the event loop keeps the GIL for
    everything else often enough to answer other requests."""
    global _POOL
    if _POOL is None:
        _POOL = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="large-body")
    return await asyncio.get_running_loop().run_in_executor(_POOL, fn)


def body_format(request: web.Request) -> str:
    """``json`` or ``yaml`` from ``Content-Type`` (parameters ignored); 415 for anything else, and
    for a ``Content-Encoding`` other than ``identity`` (bodies are not decompressed: a small gzip
    body can inflate a thousandfold)."""
    encoding = request.headers.get("Content-Encoding")
    if encoding is not None and encoding.strip().lower() not in ("", "identity"):
        raise unsupported_encoding(encoding)
    header = request.headers.get("Content-Type", "").strip()
    if not header:
        return "json"
    media_type = header.split(";", 1)[0].strip().lower()
    if media_type in JSON_TYPES:
        return "json"
    if media_type in YAML_TYPES:
        return "yaml"
    raise unsupported_media_type(media_type, ACCEPTED)


# kube-apiserver's level for a write that names none (the command line and the Python API keep Strict).
REQUEST_DEFAULT = WARN


def field_validation(request: web.Request) -> str:
    """``?fieldValidation=Strict|Warn|Ignore`` (kube-apiserver's names, exact case). Absent or empty:
    :data:`REQUEST_DEFAULT`, ``Warn``, as kube-apiserver defaults a write that names none (kubectl sends
    ``Strict`` itself), so a client that names none (a UI backend) gets the expansion of the VM as Go
    decodes it with a ``Warning`` per unknown or case-mismatched member, not a 422.
    Anything else is answered as kube-apiserver answers it: 422 naming the supported values."""
    if not request.query_string:
        return REQUEST_DEFAULT
    values = request.query.getall("fieldValidation", [])
    if not values:
        return REQUEST_DEFAULT
    value = values[0]
    if value == "":
        return REQUEST_DEFAULT
    if value in LEVELS:
        return value
    supported = ", ".join(f'"{v}"' for v in ("", *sorted(LEVELS)))
    message = f"Unsupported value: {orjson.dumps(value).decode()}: supported values: {supported}"
    body = status(
        422,
        "Invalid",
        f'UpdateOptions.meta.k8s.io "" is invalid: fieldValidation: {message}',
        details={
            "group": "meta.k8s.io",
            "kind": "UpdateOptions",
            "causes": [{"reason": "FieldValueNotSupported", "message": message, "field": "fieldValidation"}],
        },
    )
    raise StatusError(body)


def too_slow(received: int, declared: int | None, seconds: float, pace: BodyPace) -> StatusError:
    of = f" of {declared}" if declared is not None else ""
    return StatusError(
        status(
            408,
            "Timeout",
            f"the request body arrived too slowly: {received}{of} bytes in {seconds:.1f}s (a body must "
            f"arrive within {pace.timeout:g}s plus 1s per {pace.min_rate} bytes)",
        ),
        close=True,
    )


async def read_body(request: web.Request, limit: int, pace: BodyPace = DEFAULT_PACE) -> bytes:
    """The whole body: 413 over ``limit``, 408 when it arrives slower than ``pace`` allows, 400 when the
    client closes the connection before it is all there."""
    declared = request.content_length
    if declared is not None and declared > limit:
        raise too_large(limit)
    content = request.content
    if content.is_eof():  # the usual case: it came with the headers
        try:
            return await request.read()
        except web.HTTPRequestEntityTooLarge:  # chunked, without a length
            raise too_large(limit) from None
    loop = asyncio.get_running_loop()
    start = loop.time()
    received = bytearray()
    try:
        async with asyncio.timeout_at(pace.deadline(start, 0)) as timer:
            while chunk := await content.readany():
                received += chunk
                if len(received) > limit:
                    raise too_large(limit)
                timer.reschedule(pace.deadline(start, len(received)))
    except TimeoutError:
        raise too_slow(len(received), declared, loop.time() - start, pace) from None
    except ConnectionError:
        raise bad_request(
            f"the client closed the connection after {len(received)} bytes of its request body"
        ) from None
    return bytes(received)


@dataclass(frozen=True, slots=True)
class Body:
    """The one document of a body: its value (any JSON value, judged later) and its duplicate fields."""

    value: Any
    duplicates: tuple[str, ...]


def _kind_of(value: Any) -> str:
    if isinstance(value, dict):
        kind = value.get("kind")
        return kind if isinstance(kind, str) and kind else "an object without a kind"
    return {list: "a list", str: "a string", bool: "a boolean"}.get(type(value), "a number")


SCHEMA_FAILURE = "Object is not a valid VirtualMachine"  # virt-api's writeValidationErrors


GO_SCAN_LIMIT = OFFLOAD_BYTES  # bodies Go's syntax errors are worded for (a byte-wise reader in Python)


def _go_unmarshal_failure(data: bytes) -> StatusError | None:
    """virt-api's 400 for a body Go's ``json.Unmarshal`` into a map refuses (its first step), or None.

    Go's exact words come from a reader that costs about a microsecond per token, so only bodies up to
    :data:`GO_SCAN_LIMIT` get them; a larger body that is not JSON is refused in orjson's words (where orjson
    refuses what Go takes, bytes that are not UTF-8 or lone surrogates, the body is read on as before)."""
    try:
        value = orjson.loads(data)  # the usual case, quickly: one JSON object
    except orjson.JSONDecodeError as err:
        if len(data) > GO_SCAN_LIMIT:
            return (
                None
                if _go_takes(err)
                else bad_request(f"Can not unmarshal Request body to struct, error: {err}")
            )
        value = ...
    if isinstance(value, dict) or value is None:
        return None
    problem = syntax.unmarshal_error(data)
    return (
        None
        if problem is None
        else bad_request(f"Can not unmarshal Request body to struct, error: {problem}")
    )


def _go_takes(err: orjson.JSONDecodeError) -> bool:
    """Whether orjson refused what Go's decoder takes (text that is not UTF-8, a lone surrogate escape)."""
    text = str(err).lower()
    return "utf-8" in text or "surrogate" in text


def _unreadable(err: DocumentError, *, kubevirt_messages: bool) -> StatusError:
    if kubevirt_messages:
        return bad_request(f"Can not unmarshal Request body to struct, error: {err}")
    if not err.syntax:
        return bad_request(f"the request body cannot be read: {err}")
    return bad_request(f"the request body is not valid {err.syntax}: {err}")


def parse(data: bytes, *, kubevirt_messages: bool = False, go_json: bool = False) -> Body:
    """The body's one document; 400 naming the problem otherwise. ``go_json``: a JSON body Go's decoder
    refuses is refused first, in virt-api's words (``--kubevirt-error-codes``)."""
    if go_json:
        failure = _go_unmarshal_failure(data)
        if failure is not None:
            raise failure
    try:
        docs: Sequence[Document] = read_documents(data)
    except DocumentError as err:
        raise _unreadable(err, kubevirt_messages=kubevirt_messages) from None
    if len(docs) == 1:  # null included: "expected a VirtualMachine object, got null"
        return Body(docs[0].value, tuple(d.path for d in docs[0].duplicates))
    present = [d for d in docs if d.value is not None]  # empty documents around the VM (---) do not count
    if len(present) == 1:
        (doc,) = present
        return Body(doc.value, tuple(d.path for d in doc.duplicates))
    if not present:
        what = "holds only empty documents" if docs else "is empty"
        raise bad_request(f"the request body {what}: send one VirtualMachine")
    listing = ", ".join(f"document {d.number}: {_kind_of(d.value)}" for d in present)
    raise bad_request(f"the request body holds {len(present)} documents ({listing}); send one VirtualMachine")


def check_vm(
    body: Body, namespace: str, level: str = DEFAULT, *, kubevirt_messages: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """Judge the body at ``level`` and return it with ``metadata.namespace`` set to the path's
    namespace, and the field-validation warnings."""
    doc = body.value
    if kubevirt_messages:
        # virt-api checks the decoded map with KubeVirt's OpenAPI schema (the webhook's first stage does
        # the same, pkg/util/openapi) and has no fieldValidation: that check is all it does.
        problems = validate_schema(doc if isinstance(doc, dict) else {})  # null decodes as an empty map
        if problems:
            causes = [{"message": problem} for problem in problems]
            raise StatusError(status(400, "BadRequest", SCHEMA_FAILURE, details={"causes": causes}))
        level = IGNORE
    try:
        warnings = admit(doc, level, body.duplicates)
    except FieldValidationError as err:
        raise _schema_failure(err, kubevirt_messages=kubevirt_messages) from None
    name = vm_name(doc)
    meta = doc.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        cause = Cause("metadata", "must be an object", CAUSE_INVALID)
        raise StatusError(invalid_status(invalid_message(name, [cause]), [cause], name=name))
    body_namespace = meta.get("namespace")
    if body_namespace not in (None, "", namespace):
        text = f"VM namespace must be empty or {namespace}"
        if kubevirt_messages:
            raise bad_request(text)
        cause = Cause("metadata.namespace", f"Invalid value: {orjson.dumps(body_namespace).decode()}: {text}")
        raise StatusError(invalid_status(invalid_message(name, [cause]), [cause], name=name))
    return {**doc, "metadata": {**meta, "namespace": namespace}}, warnings


def check_vmi(body: Body, namespace: str) -> dict[str, Any]:
    """A PUT launch-vmi-spec body: a VirtualMachineInstance (``kind`` absent or that), returned with
    ``metadata.namespace`` set to the path's namespace. Its fields are judged when it is decoded
    (:func:`apiserver.render.launcher.decode_vmi`: Go's types); fieldValidation is not applied to VMIs."""
    doc = body.value
    if not isinstance(doc, dict):
        raise bad_request("the body must be a VirtualMachineInstance (a JSON or YAML object)")
    kind = doc.get("kind")
    if kind is not None and kind != "VirtualMachineInstance":
        hint = ": PUT launch-vm-spec renders a VirtualMachine" if kind == "VirtualMachine" else ""
        raise bad_request(
            f"the body must be a VirtualMachineInstance, not kind {orjson.dumps(kind).decode()}{hint}"
        )
    meta = doc.get("metadata")
    if meta is None:
        meta = {}
    name = meta.get("name") if isinstance(meta, dict) else None
    name = name if isinstance(name, str) else ""
    if not isinstance(meta, dict):
        cause = Cause("metadata", "must be an object", CAUSE_INVALID)
        raise StatusError(invalid_status(invalid_message(name, [cause]), [cause], name=name))
    body_namespace = meta.get("namespace")
    if body_namespace not in (None, "", namespace):
        text = f"VMI namespace must be empty or {namespace}"
        cause = Cause("metadata.namespace", f"Invalid value: {orjson.dumps(body_namespace).decode()}: {text}")
        raise StatusError(invalid_status(invalid_message(name, [cause]), [cause], name=name))
    return {**doc, "metadata": {**meta, "namespace": namespace}}


def _schema_failure(err: ExpandError, *, kubevirt_messages: bool) -> StatusError:
    if not kubevirt_messages or err.code != 422:
        return StatusError(err.status)
    causes = [
        {"message": f"{c['field']}: {c['message']}" if c.get("field") else c["message"]} for c in err.causes
    ]
    return StatusError(status(400, "BadRequest", SCHEMA_FAILURE, details={"causes": causes}))


def review_name(doc: Any, kind: str, api_version: str) -> str:
    """The ``metadata.name`` of a review-style request (create it, read the answer in its ``status``);
    400 for a body that is not an object of ``kind`` in ``api_version``."""
    if not isinstance(doc, Mapping):
        raise StatusError(status(400, "BadRequest", f"the body must be a {kind} object"))
    given_kind, given_version = doc.get("kind"), doc.get("apiVersion")
    if given_kind != kind or given_version != api_version:
        raise StatusError(
            status(
                400,
                "BadRequest",
                f"expected kind {kind} of apiVersion {api_version}, got {given_kind!r} of {given_version!r}",
            )
        )
    meta = doc.get("metadata") or {}
    return str(meta.get("name", "")) if isinstance(meta, Mapping) else ""
