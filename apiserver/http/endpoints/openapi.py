"""OpenAPI v2 (``/openapi/v2``) and v3 (``/openapi/v3``, one document per group-version).

Both declare the request and response as KubeVirt's ``v1.VirtualMachine`` schema (generated from
KubeVirt's swagger.json into ``openapi_defs.json`` by ``hack/generators/openapi_defs.py``), every error as a
``Status``, and the ``presets``/``validate`` query parameters, so generated clients get real types
where virt-api declares a string. Documents are built once; ETags let the aggregator re-poll cheaply.
"""

from __future__ import annotations

import copy
import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any

import orjson
from aiohttp import web

from apiserver.http.endpoints import openapi_catalogchange as catalog_api
from apiserver.http.endpoints import openapi_expandedvms as evm_api
from apiserver.http.endpoints import openapi_launcher as launcher_api
from apiserver.http.endpoints import openapi_preview as preview_api
from apiserver.http.errors import not_found
from apiserver.http.media import JSON, YAML, negotiate, respond_cacheable
from apiserver.http.settings import Settings
from apiserver.sources.rendered import items as evm
from apiserver.version import package_version

VM = "v1.VirtualMachine"
STATUS = "k8s.io.apimachinery.pkg.apis.meta.v1.Status"
MEDIA_TYPES = [JSON, YAML]

PRESETS_HELP = (
    "Also apply the VirtualMachineInstancePresets (kubevirt.io/v1) of the VM's namespace whose selector "
    "matches the template labels, as KubeVirt applies them to a new VMI. Conflicting parts are skipped "
    "and reported in Warning response headers. Accepts true/false/1/0; default false."
)
VALIDATE_HELP = (
    "Also run KubeVirt's VM validating admission webhook (as for a CREATE: schema, instancetype and "
    "preference, requirements, the whole VM and VMI spec, storage, volume requests); a VM it would refuse "
    "is answered 422 Invalid with the webhook's causes in its order. Accepts true/false/1/0; default false."
)

PRETTY_HELP = (
    "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates "
    "a browser or command-line HTTP tool (curl and wget)."
)

FIELD_VALIDATION_HELP = (
    "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) "
    "containing unknown or duplicate fields, as kube-apiserver does. Valid values are: - Ignore: expand "
    "as KubeVirt does, dropping unknown fields and keeping the last of duplicate fields. - Warn (the "
    "default when none is named, as kube-apiserver's): the same, with a Warning response header for "
    "each unknown, case-mismatched, duplicate or missing required field. - Strict (what kubectl sends): "
    "refuse such a VM with 422 Invalid, one cause per field. Any other value is 422 naming the "
    "supported ones."
)

# Error responses each operation can give (every one is a Status).
_ERRORS = {
    "410": "Expired: the resourceVersion or continue token is older than this server can answer from",
    "400": "Bad Request: malformed body or query parameter",
    "401": "Unauthorized",
    "403": "Forbidden",
    "404": "Not Found: the VirtualMachine does not exist",
    "405": "Method Not Allowed",
    "406": "Not Acceptable: Accept excludes JSON and YAML",
    "413": "Request Entity Too Large: the body exceeds 3 MiB",
    "415": "Unsupported Media Type: the body is neither JSON nor YAML, or has a Content-Encoding",
    "417": "Expectation Failed: an Expect header other than 100-continue",
    "422": "Invalid: the VirtualMachine cannot be expanded (causes name the fields)",
    "429": "Too Many Requests: too many request bodies held at once (see Retry-After)",
    "500": "Internal Server Error",
    "503": "Service Unavailable: the cluster API could not be reached (see Retry-After)",
    "504": "Timeout: the cluster API or the request took too long (see Retry-After)",
}
_GET_ERRORS = ("400", "401", "403", "404", "405", "406", "417", "422", "500", "503", "504")
_PUT_ERRORS = ("400", "401", "403", "405", "406", "413", "415", "417", "422", "429", "500", "503", "504")


# Both documents type the request and the response as KubeVirt's VirtualMachine.
_VM_GVK = {"group": "kubevirt.io", "version": "v1", "kind": "VirtualMachine"}


# The security scheme kube-apiserver's documents declare, the same in v2 and v3.
_BEARER_TOKEN = {
    "type": "apiKey",
    "name": "authorization",
    "in": "header",
    "description": "Bearer Token authentication",
}


def _tag(group: str, version: str) -> str:
    """The operation tag kube-openapi derives from a group-version."""
    return f"{group.replace('.', '_')}_{version}"


@cache
def definitions() -> dict[str, Any]:
    data = resources.files("apiserver.http.endpoints").joinpath("openapi_defs.json").read_text()
    defs: dict[str, Any] = json.loads(data)["definitions"]
    return defs


def _ref2(name: str) -> dict[str, str]:
    return {"$ref": f"#/definitions/{name}"}


def _operations(settings: Settings, version: str) -> list[dict[str, Any]]:
    """The two operations of one version, in a neutral form both document versions are built from."""
    prefix = f"/apis/{settings.api_group}/{version}/namespaces/{{namespace}}"
    namespace = {
        "name": "namespace",
        "in": "path",
        "required": True,
        "type": "string",
        "description": "Object name and auth scope, such as for teams and projects",
    }
    name = {
        "name": "name",
        "in": "path",
        "required": True,
        "type": "string",
        "description": "Name of the VirtualMachine",
    }
    flags = [
        {"name": "presets", "in": "query", "type": "boolean", "description": PRESETS_HELP},
        {"name": "validate", "in": "query", "type": "boolean", "description": VALIDATE_HELP},
        # As kube-apiserver documents it on every operation (a string, read by Go's ParseBool).
        {"name": "pretty", "in": "query", "type": "string", "uniqueItems": True, "description": PRETTY_HELP},
    ]
    return [
        {
            "path": f"{prefix}/virtualmachines/{{name}}/expand-spec",
            "method": "get",
            "operationId": f"{version}vm-ExpandSpec",
            "description": "Get the stored VirtualMachine with its instancetype and preference expanded.",
            "action": "get",
            "parameters": [
                name,
                namespace,
                *flags,
                {
                    "name": "If-None-Match",
                    "in": "header",
                    "type": "string",
                    "description": "An ETag from an earlier answer; 304 when still current.",
                },
            ],
            "body": False,
            "errors": _GET_ERRORS,
            "etag": True,
        },
        {
            "path": f"{prefix}/expand-vm-spec",
            "method": "put",
            "operationId": f"{version}ExpandSpec",
            "description": "Expand the instancetype and preference of the VirtualMachine in the body.",
            "action": "put",
            "parameters": [
                namespace,
                *flags,
                {
                    "name": "fieldValidation",
                    "in": "query",
                    "type": "string",
                    "uniqueItems": True,
                    "description": FIELD_VALIDATION_HELP,
                },
            ],
            "body": True,
            "errors": _PUT_ERRORS,
            "etag": False,
        },
    ]


def _response_headers2(op: dict[str, Any], code: str) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if code == "200":
        headers["Warning"] = {
            "type": "string",
            "description": "Preset conflicts and deprecations, fieldValidation=Warn findings (code 299).",
        }
        if op["etag"]:
            headers["ETag"] = {"type": "string", "description": "Strong validator of the response bytes."}
    if code in ("429", "503", "504"):
        headers["Retry-After"] = {"type": "integer", "description": "Seconds to wait before retrying."}
    return headers


_LIST_MEDIA = [JSON, YAML, "application/json;stream=watch"]


def _collection_v2(paths: dict[str, Any]) -> None:
    for op in evm_api.operations():
        responses: dict[str, Any] = {"200": {"description": "OK", "schema": _ref2(op["response"])}}
        responses.update({c: {"description": _ERRORS[c], "schema": _ref2(STATUS)} for c in evm_api.ERRORS})
        paths[op["path"]] = {
            "get": {
                "description": op["description"],
                "operationId": op["operationId"],
                "produces": _LIST_MEDIA if op["action"] == "list" else MEDIA_TYPES,
                "schemes": ["https"],
                "tags": [_tag(evm.GROUP, evm.VERSION)],
                "parameters": [dict(p) for p in op["parameters"]],
                "responses": responses,
                "x-kubernetes-action": op["action"],
                "x-kubernetes-group-version-kind": dict(evm_api.GVK),
            }
        }


def _preview_v2(paths: dict[str, Any], api: Any = preview_api) -> None:
    op = api.operation()
    responses: dict[str, Any] = {"201": {"description": "Created", "schema": _ref2(op["response"])}}
    said = {**_ERRORS, **getattr(api, "DESCRIPTIONS", {})}
    responses.update({c: {"description": said[c], "schema": _ref2(STATUS)} for c in api.ERRORS})
    paths[op["path"]] = {
        "post": {
            "description": op["description"],
            "operationId": op["operationId"],
            "consumes": MEDIA_TYPES,
            "produces": MEDIA_TYPES,
            "schemes": ["https"],
            "tags": [_tag(evm.GROUP, evm.VERSION)],
            "parameters": [
                *(dict(p) for p in op["parameters"]),
                {"name": "body", "in": "body", "required": True, "schema": _ref2(op["request"])},
            ],
            "responses": responses,
            "x-kubernetes-action": op["action"],
            "x-kubernetes-group-version-kind": dict(api.GVK),
        }
    }


def _preview_v3(paths: dict[str, Any], api: Any = preview_api) -> None:
    op = api.operation()
    responses: dict[str, Any] = {
        "201": {"description": "Created", "content": _content(op["response"], MEDIA_TYPES)}
    }
    said = {**_ERRORS, **getattr(api, "DESCRIPTIONS", {})}
    for code in api.ERRORS:
        responses[code] = {"description": said[code], "content": _content(STATUS, [JSON])}
    paths[op["path"]] = {
        "post": {
            "description": op["description"],
            "operationId": op["operationId"],
            "tags": [_tag(evm.GROUP, evm.VERSION)],
            "parameters": [_param_v3(p) for p in op["parameters"]],
            "requestBody": {"required": True, "content": _content(op["request"], MEDIA_TYPES)},
            "responses": responses,
            "x-kubernetes-action": op["action"],
            "x-kubernetes-group-version-kind": dict(api.GVK),
        }
    }


def _launcher_v2(paths: dict[str, Any], settings: Settings, version: str) -> None:
    """GET launch-spec, PUT launch-vm-spec and PUT launch-vmi-spec of one version."""
    for op in launcher_api.operations(settings.api_group, version):
        params = [dict(p) for p in op["parameters"]]
        if op["body"]:
            params.insert(0, {"name": "body", "in": "body", "required": True, "schema": _ref2(op["body"])})
        responses: dict[str, Any] = {"200": {"description": "OK", "schema": _ref2(launcher_api.LAUNCH)}}
        responses.update(
            {c: {"description": _ERRORS[c], "schema": _ref2(STATUS)} for c in launcher_api.ERRORS}
        )
        operation: dict[str, Any] = {
            "description": op["description"],
            "operationId": op["operationId"],
            "produces": MEDIA_TYPES,
            "schemes": ["https"],
            "tags": [_tag(settings.api_group, version)],
            "parameters": params,
            "responses": responses,
            "x-kubernetes-action": op["method"],
            "x-kubernetes-group-version-kind": dict(launcher_api.GVK),
        }
        if op["body"]:
            operation["consumes"] = MEDIA_TYPES
        paths.setdefault(op["path"], {})[op["method"]] = operation


def _launcher_v3(paths: dict[str, Any], settings: Settings, version: str) -> None:
    for op in launcher_api.operations(settings.api_group, version):
        responses: dict[str, Any] = {
            "200": {"description": "OK", "content": _content(launcher_api.LAUNCH, MEDIA_TYPES)}
        }
        for code in launcher_api.ERRORS:
            responses[code] = {"description": _ERRORS[code], "content": _content(STATUS, [JSON])}
        operation: dict[str, Any] = {
            "description": op["description"],
            "operationId": op["operationId"],
            "tags": [_tag(settings.api_group, version)],
            "parameters": [_param_v3(p) for p in op["parameters"]],
            "responses": responses,
            "x-kubernetes-action": op["method"],
            "x-kubernetes-group-version-kind": dict(launcher_api.GVK),
        }
        if op["body"]:
            operation["requestBody"] = {"required": True, "content": _content(op["body"], MEDIA_TYPES)}
        paths[op["path"]] = {op["method"]: operation}


def openapi_v2(settings: Settings, collection: bool = False, catalog: bool = False) -> dict[str, Any]:
    """``collection``: include ``expandedvirtualmachines`` (served only with the VM cache); ``catalog``:
    ``catalogchangepreviews`` (served where the source holds the fleet)."""
    paths: dict[str, Any] = {}
    for version in settings.api_versions:
        for op in _operations(settings, version):
            params = [dict(p) for p in op["parameters"]]
            if op["body"]:
                params.insert(0, {"name": "body", "in": "body", "required": True, "schema": _ref2(VM)})
            responses: dict[str, Any] = {"200": {"description": "OK", "schema": _ref2(VM)}}
            if op["etag"]:
                responses["304"] = {"description": "Not Modified: the If-None-Match ETag is current"}
            responses.update(
                {code: {"description": _ERRORS[code], "schema": _ref2(STATUS)} for code in op["errors"]}
            )
            for code, response in responses.items():
                if headers := _response_headers2(op, code):
                    response["headers"] = headers
            operation: dict[str, Any] = {
                "description": op["description"],
                "operationId": op["operationId"],
                "produces": MEDIA_TYPES,
                "schemes": ["https"],
                "tags": [_tag(settings.api_group, version)],
                "parameters": params,
                "responses": responses,
                "x-kubernetes-action": op["action"],
                "x-kubernetes-group-version-kind": dict(_VM_GVK),
            }
            if op["body"]:
                operation["consumes"] = MEDIA_TYPES
            paths.setdefault(op["path"], {})[op["method"]] = operation
    for version in settings.api_versions:
        _launcher_v2(paths, settings, version)
    defs = copy.deepcopy(definitions())
    defs.update(launcher_api.definitions())
    if collection:
        _collection_v2(paths)
        defs.update(evm_api.definitions())
    _preview_v2(paths)
    defs.update(preview_api.definitions())
    if catalog:
        _preview_v2(paths, catalog_api)
        defs.update(catalog_api.definitions())
    return {
        "swagger": "2.0",
        "info": {"title": "kubevirt-expand-apiserver", "version": package_version()},
        "paths": paths,
        "definitions": _schema_v2(defs),
        "securityDefinitions": {"BearerToken": dict(_BEARER_TOKEN)},
        "security": [{"BearerToken": []}],
    }


def _drop_invalid_default(out: dict[str, Any]) -> None:
    """Drop Go zero-value defaults that contradict their schema (``{}`` for an object with required
    members, ``""`` outside an enum): they carry no information and OpenAPI validators reject them."""
    if "default" not in out:
        return
    default = out["default"]
    empty_object = ("$ref" in out or "allOf" in out) and default == {}
    outside_enum = "enum" in out and default not in out["enum"]
    if empty_object or outside_enum:
        del out["default"]


def _schema_v2(node: Any) -> Any:
    """KubeVirt's schemas as Swagger 2.0 allows them: one type per schema, ``x-nullable``."""
    if isinstance(node, list):
        return [_schema_v2(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _schema_v2(value) for key, value in node.items()}
    _drop_invalid_default(out)
    if out.pop("nullable", False):
        out["x-nullable"] = True
    kind = out.get("type")
    if isinstance(kind, list):
        types = [t for t in kind if t != "null"]
        if len(types) < len(kind):
            out["x-nullable"] = True
        if len(types) == 1:
            out["type"] = types[0]
        else:
            # kube-openapi's v2 spelling of int-or-string.
            out["type"] = "string"
            out["format"] = "int-or-string"
    return out


def _schema_v3(node: Any) -> Any:
    """A v2 schema as OpenAPI 3.0 has it: refs to components, no siblings beside ``$ref``."""
    if isinstance(node, list):
        return [_schema_v3(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _schema_v3(value) for key, value in node.items()}
    _drop_invalid_default(out)
    kind = out.get("type")
    if isinstance(kind, list):
        # KubeVirt writes ``type: [string, number]`` (int-or-string) and ``[string, "null"]``; 3.0 wants
        # one type per schema and ``nullable``.
        types = [t for t in kind if t != "null"]
        if len(types) < len(kind):
            out["nullable"] = True
        if len(types) == 1:
            out["type"] = types[0]
        else:
            del out["type"]
            out["anyOf"] = [{"type": t} for t in types]
            out["x-kubernetes-int-or-string"] = True
    ref = out.get("$ref")
    if isinstance(ref, str):
        ref = ref.replace("#/definitions/", "#/components/schemas/")
        siblings = {k: v for k, v in out.items() if k != "$ref"}
        if not siblings:
            return {"$ref": ref}
        # 3.0 ignores members beside $ref; kube-openapi wraps the ref in allOf to keep them.
        return {"allOf": [{"$ref": ref}], **siblings}
    return out


def _param_v3(param: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in param.items() if k not in ("type", "uniqueItems")}
    out["schema"] = {"type": param["type"], **({"uniqueItems": True} if param.get("uniqueItems") else {})}
    return out


def _content(name: str, media_types: list[str]) -> dict[str, Any]:
    return {media: {"schema": {"$ref": f"#/components/schemas/{name}"}} for media in media_types}


def _collection_v3(paths: dict[str, Any]) -> None:
    for op in evm_api.operations():
        media = _LIST_MEDIA if op["action"] == "list" else MEDIA_TYPES
        responses: dict[str, Any] = {"200": {"description": "OK", "content": _content(op["response"], media)}}
        for code in evm_api.ERRORS:
            responses[code] = {"description": _ERRORS[code], "content": _content(STATUS, [JSON])}
        paths[op["path"]] = {
            "get": {
                "description": op["description"],
                "operationId": op["operationId"],
                "tags": [_tag(evm.GROUP, evm.VERSION)],
                "parameters": [_param_v3(p) for p in op["parameters"]],
                "responses": responses,
                "x-kubernetes-action": op["action"],
                "x-kubernetes-group-version-kind": dict(evm_api.GVK),
            }
        }


def openapi_v3(
    settings: Settings, version: str, group: str = "", collection: bool = False, catalog: bool = False
) -> dict[str, Any]:
    """The document of one group-version: the configured group's, and/or the collection's."""
    group = group or settings.api_group
    paths: dict[str, Any] = {}
    ours = group == settings.api_group and version in settings.api_versions
    for op in _operations(settings, version) if ours else ():
        responses: dict[str, Any] = {"200": {"description": "OK", "content": _content(VM, MEDIA_TYPES)}}
        if op["etag"]:
            responses["304"] = {"description": "Not Modified: the If-None-Match ETag is current"}
        for code in op["errors"]:
            responses[code] = {"description": _ERRORS[code], "content": _content(STATUS, [JSON])}
        for code, response in responses.items():
            headers = _response_headers2(op, code)
            if headers:
                response["headers"] = {
                    name: {"description": h["description"], "schema": {"type": h["type"]}}
                    for name, h in headers.items()
                }
        operation: dict[str, Any] = {
            "description": op["description"],
            "operationId": op["operationId"],
            "tags": [_tag(settings.api_group, version)],
            "parameters": [_param_v3(p) for p in op["parameters"]],
            "responses": responses,
            "x-kubernetes-action": op["action"],
            "x-kubernetes-group-version-kind": dict(_VM_GVK),
        }
        if op["body"]:
            operation["requestBody"] = {"required": True, "content": _content(VM, MEDIA_TYPES)}
        paths[op["path"]] = {op["method"]: operation}
    if ours:
        _launcher_v3(paths, settings, version)
    defs = copy.deepcopy(definitions())
    defs.update(launcher_api.definitions())
    if collection and group == evm.GROUP and version == evm.VERSION:
        _collection_v3(paths)
        defs.update(evm_api.definitions())
    if group == evm.GROUP and version == evm.VERSION:
        _preview_v3(paths)
        defs.update(preview_api.definitions())
        if catalog:
            _preview_v3(paths, catalog_api)
            defs.update(catalog_api.definitions())
    return {
        "openapi": "3.0.0",
        "info": {"title": "kubevirt-expand-apiserver", "version": package_version()},
        "paths": paths,
        "components": {
            "schemas": _schema_v3(defs),
            "securitySchemes": {"BearerToken": dict(_BEARER_TOKEN)},
        },
        "security": [{"BearerToken": []}],
    }


def add_routes(
    app: web.Application, settings: Settings, *, collection: bool = False, catalog: bool = False
) -> None:
    """``collection``: the rendered VMs are served, so the documents describe them too; ``catalog``: the
    catalog change preview is."""
    v2_body = orjson.dumps(openapi_v2(settings, collection, catalog))
    group_versions = [(settings.api_group, v) for v in settings.api_versions]
    if (collection or catalog) and (evm.GROUP, evm.VERSION) not in group_versions:
        group_versions.append((evm.GROUP, evm.VERSION))
    v3_bodies = {
        f"apis/{group}/{version}": orjson.dumps(openapi_v3(settings, version, group, collection, catalog))
        for group, version in group_versions
    }
    hashes = {path: hashlib.sha256(body).hexdigest().upper() for path, body in v3_bodies.items()}
    v3_index = orjson.dumps(
        {"paths": {path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={h}"} for path, h in hashes.items()}}
    )

    async def v2(request: web.Request) -> web.Response:
        negotiate(request, (JSON,))
        return respond_cacheable(request, v2_body, JSON)

    async def v3_root(request: web.Request) -> web.Response:
        negotiate(request, (JSON,))
        return respond_cacheable(request, v3_index, JSON)

    async def v3_group_version(request: web.Request) -> web.Response:
        negotiate(request, (JSON,))
        path = request.match_info["gv"].strip("/")
        body = v3_bodies.get(path)
        if body is None:
            raise not_found()
        wanted = request.query.get("hash")
        if wanted is not None and wanted != hashes[path]:
            # An old hash: send the client to the current document, as kube-apiserver does.
            raise web.HTTPMovedPermanently(f"/openapi/v3/{path}?hash={hashes[path]}")
        cache_control = "public, immutable" if wanted else "no-cache, private"
        return respond_cacheable(request, body, JSON, headers=[("Cache-Control", cache_control)])

    app.router.add_get("/openapi/v2", v2)
    app.router.add_get("/openapi/v3", v3_root)
    app.router.add_get("/openapi/v3/{gv:apis/.+}", v3_group_version)
