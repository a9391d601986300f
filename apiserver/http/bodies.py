"""Reading the VirtualMachine of a PUT body: media type, size, parsing, schema, namespace.

A body without ``Content-Type`` is JSON: ``kubectl replace --raw -f vm.json`` sends none (KubeVirt
answers it 415; we accept it). Each failure is the Status the contract names: 415, 413, 400 for
bytes that are not a JSON/YAML object, 422 with field causes for a body that is not a valid
VirtualMachine or names another namespace.
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml
from aiohttp import web

from apiserver.http.errors import StatusError, bad_request, too_large, unsupported_media_type
from apiserver.render import gojson
from apiserver.render.errors import CAUSE_INVALID, Cause, invalid_status, status

JSON_TYPES = ("application/json",)
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")
ACCEPTED = ("application/json", "application/yaml")


class _YAMLLoader(yaml.SafeLoader):
    """Safe YAML whose timestamps stay the text they were written as (Go reads them into strings)."""


_YAMLLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def body_format(request: web.Request) -> str:
    """``json`` or ``yaml`` from ``Content-Type`` (parameters ignored); 415 for anything else."""
    header = request.headers.get("Content-Type", "").strip()
    if not header:
        return "json"
    media_type = header.split(";", 1)[0].strip().lower()
    if media_type in JSON_TYPES:
        return "json"
    if media_type in YAML_TYPES:
        return "yaml"
    raise unsupported_media_type(media_type, ACCEPTED)


async def read_body(request: web.Request, limit: int) -> bytes:
    if request.content_length is not None and request.content_length > limit:
        raise too_large(limit)
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise too_large(limit) from None


def parse(data: bytes, fmt: str, *, kubevirt_messages: bool = False) -> dict[str, Any]:
    """The body as a JSON object; 400 naming the problem otherwise."""

    def fail(problem: str) -> StatusError:
        if kubevirt_messages:
            return bad_request(f"Can not unmarshal Request body to struct, error: {problem}")
        return bad_request(f"the request body is not a valid {fmt.upper()} object: {problem}")

    if not data.strip():
        raise fail("the body is empty")
    try:
        # _YAMLLoader is a SafeLoader: no arbitrary objects.
        doc = yaml.load(data, Loader=_YAMLLoader) if fmt == "yaml" else orjson.loads(data)
    except (orjson.JSONDecodeError, yaml.YAMLError) as err:
        raise fail(str(err).replace("\n", " ")) from None
    if not isinstance(doc, dict):
        kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(doc), "a number"
        )
        raise fail(f"expected a VirtualMachine object, got {kind}")
    return doc


def schema_causes(doc: dict[str, Any]) -> list[Cause]:
    """Schema problems of ``doc`` as the Go type VirtualMachine: unknown fields, wrong types, required."""
    return [Cause(p.path, p.message, p.reason) for p in gojson.check(doc, "VirtualMachine")]


def _invalid_message(name: str, causes: list[Cause]) -> str:
    parts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return f'VirtualMachine.kubevirt.io "{name}" is invalid: {joined}'


def _name_of(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


def check_vm(doc: dict[str, Any], namespace: str, *, kubevirt_messages: bool = False) -> dict[str, Any]:
    """Validate the body and return it with ``metadata.namespace`` set to the path's namespace."""
    name = _name_of(doc)
    causes = schema_causes(doc)
    if causes:
        if kubevirt_messages:
            details = {
                "causes": [{"message": f"{c.field}: {c.message}" if c.field else c.message} for c in causes]
            }
            raise StatusError(
                status(400, "BadRequest", "Object is not a valid VirtualMachine", details=details)
            )
        raise StatusError(invalid_status(_invalid_message(name, causes), causes, name=name))
    meta = doc.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        cause = Cause("metadata", "must be an object", CAUSE_INVALID)
        raise StatusError(invalid_status(_invalid_message(name, [cause]), [cause], name=name))
    body_namespace = meta.get("namespace")
    if body_namespace not in (None, "", namespace):
        text = f"VM namespace must be empty or {namespace}"
        if kubevirt_messages:
            raise bad_request(text)
        cause = Cause("metadata.namespace", f"Invalid value: {orjson.dumps(body_namespace).decode()}: {text}")
        raise StatusError(invalid_status(_invalid_message(name, [cause]), [cause], name=name))
    return {**doc, "metadata": {**meta, "namespace": namespace}}
